//go:build linux

package seccomp

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// ApplyNotify is Apply with the notifying filter (AssembleNotify) and a
// listener: it returns the listener's descriptor (close-on-exec). Every
// thread gets the filter (TSYNC; with TSYNC_ESRCH, which Linux 5.7 added
// so that TSYNC and NEW_LISTENER can be combined). On a kernel that
// refuses the flags it returns an error wrapping ErrNoListener and
// installs nothing: the caller then uses Apply.
func ApplyNotify() (int, error) {
	insts, err := AssembleNotify(runtime.GOARCH)
	if err != nil {
		return -1, err
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return -1, fmt.Errorf("seccomp: assemble: %w", err)
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	nnp, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	if err != nil || nnp != 1 {
		return -1, ErrNoNewPrivs
	}
	fd, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC|unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH|unix.SECCOMP_FILTER_FLAG_NEW_LISTENER,
		uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(filter)
	switch errno {
	case 0:
		return int(fd), nil
	case unix.EINVAL, unix.ENOSYS:
		return -1, fmt.Errorf("%w: %w", ErrNoListener, errno)
	case unix.ESRCH:
		return -1, errors.New("seccomp: a thread could not be synchronised (TSYNC); filter not installed")
	}
	return -1, fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER, TSYNC|NEW_LISTENER): %w", errno)
}

// ErrNoListener: the kernel has no seccomp user notification with TSYNC
// (before Linux 5.7).
var ErrNoListener = errors.New("seccomp: no user-notification listener on this kernel")

// struct seccomp_notif and seccomp_notif_resp (include/uapi/linux/seccomp.h).
type notif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Nr    int32
	Arch  uint32
	IP    uint64
	Args  [6]uint64
}

type notifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// Serve answers every notification on the listener fd with the errno the
// ordinary filter returns (Decider), after calling report: a denial is
// reported before the agent's call returns, so none is lost to an agent
// that exits right after. It returns when the listener fails (every
// filtered task is gone). report must not block for long: the agent's
// call waits for it.
func Serve(fd int, d *Decider, report func(pid int, den Denial)) {
	for {
		var n notif
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&n)))
		if errno == unix.EINTR {
			continue
		}
		if errno == unix.ENOENT {
			continue // the task died before we read its call
		}
		if errno != 0 {
			return
		}
		den := d.Decide(n.Nr, n.Arch, n.Args)
		report(int(n.Pid), den)
		resp := notifResp{ID: n.ID, Error: -int32(den.errno)}
		_, _, _ = unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&resp)))
	}
}
