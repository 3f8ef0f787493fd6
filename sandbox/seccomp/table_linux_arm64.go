package seccomp

import (
	"sync"

	"golang.org/x/sys/unix"
)

// nativeTable numbers the system calls the rules name, on arm64, from
// golang.org/x/sys/unix: a table as constants costs nothing at start-up,
// where a full syscall table built in a package init would be paid by
// fedmem-run twice per launch. It is built on first use, not in the
// package init, which the launcher paid without ever using it (issue 9).
// TestNativeTableMatchesLibrary checks it against go-seccomp-bpf's tables.
var nativeTable = sync.OnceValue(func() *archTable {
	return &archTable{ID: unix.AUDIT_ARCH_AARCH64, SyscallNames: commonSyscalls()}
})
