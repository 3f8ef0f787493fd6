package seccomp

import (
	"sync"

	"golang.org/x/sys/unix"
)

// nativeTable numbers the system calls the rules name, on amd64, from
// golang.org/x/sys/unix: a table as constants costs nothing at start-up,
// where a full syscall table built in a package init would be paid by
// fedmem-run twice per launch. It is built on first use, not in the
// package init, which the launcher paid without ever using it (issue 9).
// TestNativeTableMatchesLibrary checks it against go-seccomp-bpf's tables.
var nativeTable = sync.OnceValue(func() *archTable {
	names := commonSyscalls()
	for name, nr := range map[string]int{
		"chmod":     unix.SYS_CHMOD,
		"chown":     unix.SYS_CHOWN,
		"creat":     unix.SYS_CREAT,
		"futimesat": unix.SYS_FUTIMESAT,
		"lchown":    unix.SYS_LCHOWN,
		"link":      unix.SYS_LINK,
		"mkdir":     unix.SYS_MKDIR,
		"mknod":     unix.SYS_MKNOD,
		"open":      unix.SYS_OPEN,
		"rename":    unix.SYS_RENAME,
		"rmdir":     unix.SYS_RMDIR,
		"symlink":   unix.SYS_SYMLINK,
		"unlink":    unix.SYS_UNLINK,
		"utime":     unix.SYS_UTIME,
		"utimes":    unix.SYS_UTIMES,
	} {
		names[name] = nr
	}
	return &archTable{ID: unix.AUDIT_ARCH_X86_64, SyscallNames: names}
})
