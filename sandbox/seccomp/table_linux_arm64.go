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
	return &archTable{
		ID: unix.AUDIT_ARCH_AARCH64,
		SyscallNames: map[string]int{
			"acct":              unix.SYS_ACCT,
			"add_key":           unix.SYS_ADD_KEY,
			"adjtimex":          unix.SYS_ADJTIMEX,
			"bpf":               unix.SYS_BPF,
			"clock_adjtime":     unix.SYS_CLOCK_ADJTIME,
			"clock_settime":     unix.SYS_CLOCK_SETTIME,
			"clone":             unix.SYS_CLONE,
			"clone3":            unix.SYS_CLONE3,
			"delete_module":     unix.SYS_DELETE_MODULE,
			"fallocate":         unix.SYS_FALLOCATE,
			"finit_module":      unix.SYS_FINIT_MODULE,
			"init_module":       unix.SYS_INIT_MODULE,
			"io_uring_enter":    unix.SYS_IO_URING_ENTER,
			"io_uring_register": unix.SYS_IO_URING_REGISTER,
			"io_uring_setup":    unix.SYS_IO_URING_SETUP,
			"ioctl":             unix.SYS_IOCTL,
			"kexec_file_load":   unix.SYS_KEXEC_FILE_LOAD,
			"kexec_load":        unix.SYS_KEXEC_LOAD,
			"keyctl":            unix.SYS_KEYCTL,
			"lookup_dcookie":    unix.SYS_LOOKUP_DCOOKIE,
			"name_to_handle_at": unix.SYS_NAME_TO_HANDLE_AT,
			"nfsservctl":        unix.SYS_NFSSERVCTL,
			"open_by_handle_at": unix.SYS_OPEN_BY_HANDLE_AT,
			"perf_event_open":   unix.SYS_PERF_EVENT_OPEN,
			"personality":       unix.SYS_PERSONALITY,
			"pidfd_getfd":       unix.SYS_PIDFD_GETFD,
			"process_madvise":   unix.SYS_PROCESS_MADVISE,
			"process_vm_readv":  unix.SYS_PROCESS_VM_READV,
			"process_vm_writev": unix.SYS_PROCESS_VM_WRITEV,
			"ptrace":            unix.SYS_PTRACE,
			"quotactl":          unix.SYS_QUOTACTL,
			"quotactl_fd":       unix.SYS_QUOTACTL_FD,
			"reboot":            unix.SYS_REBOOT,
			"request_key":       unix.SYS_REQUEST_KEY,
			"setns":             unix.SYS_SETNS,
			"settimeofday":      unix.SYS_SETTIMEOFDAY,
			"swapoff":           unix.SYS_SWAPOFF,
			"swapon":            unix.SYS_SWAPON,
			"syslog":            unix.SYS_SYSLOG,
			"unshare":           unix.SYS_UNSHARE,
			"userfaultfd":       unix.SYS_USERFAULTFD,
			"vhangup":           unix.SYS_VHANGUP,
			"mount":             unix.SYS_MOUNT,
			"umount2":           unix.SYS_UMOUNT2,
			"pivot_root":        unix.SYS_PIVOT_ROOT,
			"move_mount":        unix.SYS_MOVE_MOUNT,
			"open_tree":         unix.SYS_OPEN_TREE,
			"open_tree_attr":    unix.SYS_OPEN_TREE_ATTR,
			"fsopen":            unix.SYS_FSOPEN,
			"fsconfig":          unix.SYS_FSCONFIG,
			"fsmount":           unix.SYS_FSMOUNT,
			"fspick":            unix.SYS_FSPICK,
			"mount_setattr":     unix.SYS_MOUNT_SETATTR,
			// The reporting filter's write calls (writes.go).
			"fchmod":    unix.SYS_FCHMOD,
			"fchmodat":  unix.SYS_FCHMODAT,
			"fchmodat2": unix.SYS_FCHMODAT2,
			"fchownat":  unix.SYS_FCHOWNAT,
			"linkat":    unix.SYS_LINKAT,
			"mkdirat":   unix.SYS_MKDIRAT,
			"mknodat":   unix.SYS_MKNODAT,
			"openat":    unix.SYS_OPENAT,
			"openat2":   unix.SYS_OPENAT2,
			"renameat":  unix.SYS_RENAMEAT,
			"renameat2": unix.SYS_RENAMEAT2,
			"symlinkat": unix.SYS_SYMLINKAT,
			"truncate":  unix.SYS_TRUNCATE,
			"unlinkat":  unix.SYS_UNLINKAT,
			"utimensat": unix.SYS_UTIMENSAT,
		},
	}
})
