package landlock

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// ScopeThread puts the calling thread — only that thread — into a nested
// Landlock domain that handles no file access but scopes signals and
// abstract unix sockets (ABI 6). A process forked from it afterwards can
// neither signal nor connect to anything outside that nested domain: in
// particular not the sandbox's pid 1, whose other threads (and so its
// thread-group leader) stay in the parent domain.
//
// The caller must have locked the goroutine to its thread and set
// no_new_privs. It returns false, nil when the kernel's ABI is below 6.
func ScopeThread() (bool, error) {
	if ABI() < 6 {
		return false, nil
	}
	// Every ruleset denies reparenting (LANDLOCK_ACCESS_FS_REFER) unless a
	// rule grants it, even when it handles no file access: without the rule
	// on "/" below, any rename or link across directories would fail with
	// EXDEV in the agent (Codex's self-install does exactly that). The outer
	// domain still decides where reparenting is allowed.
	attr := unix.LandlockRulesetAttr{
		Handled_access_fs: unix.LANDLOCK_ACCESS_FS_REFER,
		Scoped:            unix.LANDLOCK_SCOPE_SIGNAL | unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET,
	}
	// Only the first three fields: older kernels reject a larger struct
	// unless its tail is zero, and some check the size exactly.
	const size = 3 * 8
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return false, errno
	}
	defer unix.Close(int(fd))
	root, err := unix.Open("/", unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, err
	}
	defer unix.Close(root)
	rule := unix.LandlockPathBeneathAttr{Allowed_access: unix.LANDLOCK_ACCESS_FS_REFER, Parent_fd: int32(root)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, fd, unix.LANDLOCK_RULE_PATH_BENEATH, uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
		return false, errno
	}
	// Raw syscall, not go-landlock: this must not be synchronised to the
	// other threads.
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno != 0 {
		return false, errno
	}
	return true, nil
}
