package vault

import (
	"fmt"
	"syscall"
)

// DropLauncherGroup ends a setgid launcher's hold on its group. fedmem-run,
// installed setgid to the launcher group (`make install
// FEDMEM_LAUNCHER_GROUP=G`), holds G as its effective (and saved) gid only
// to create the session record in 90-inbox/.sessions/ (mode 03770, group G);
// it must call this right after writing the record and before anything
// else runs (home folders created, the inbox, the sandbox). It sets the
// real, effective and saved gid to the real gid on every thread
// (syscall.Setresgid), then checks that G can no longer be regained.
// dropped is false when the process was not setgid (nothing to do).
//
// The process stays non-dumpable after a setgid exec, so the caller's user
// cannot ptrace it to write records while it still holds G.
func DropLauncherGroup() (dropped bool, err error) {
	rgid, egid := syscall.Getgid(), syscall.Getegid()
	if rgid == egid {
		// Not setgid, or the saved gid alone differs: drop that too.
		if err := syscall.Setresgid(rgid, rgid, rgid); err != nil {
			return false, fmt.Errorf("drop launcher group: %w", err)
		}
		return false, nil
	}
	if err := syscall.Setresgid(rgid, rgid, rgid); err != nil {
		return false, fmt.Errorf("drop launcher group %d: %w", egid, err)
	}
	if syscall.Getegid() != rgid {
		return false, fmt.Errorf("drop launcher group %d: effective gid still %d", egid, syscall.Getegid())
	}
	if err := syscall.Setegid(egid); err == nil {
		return false, fmt.Errorf("drop launcher group %d: it could be regained", egid)
	}
	return true, nil
}
