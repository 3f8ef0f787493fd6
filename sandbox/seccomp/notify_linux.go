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

// ApplyNotify is Apply with the notifying filter (AssembleNotify, with
// its write section when writes) and a listener: it returns the listener's descriptor (close-on-exec). Every
// thread gets the filter (TSYNC; with TSYNC_ESRCH, which Linux 5.7 added
// so that TSYNC and NEW_LISTENER can be combined). On a kernel that
// refuses the flags it returns an error wrapping ErrNoListener and
// installs nothing: the caller then uses Apply.
func ApplyNotify(writes bool, families ...uint32) (int, error) {
	insts, err := AssembleNotify(runtime.GOARCH, writes, families...)
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
	// WAIT_KILLABLE_RECV (Linux 5.19): once the listener has a call, the
	// caller waits killable, so a Go agent's preemption signals do not
	// restart every notified write over and over. Without it before 5.19.
	const flags = unix.SECCOMP_FILTER_FLAG_TSYNC | unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH | unix.SECCOMP_FILTER_FLAG_NEW_LISTENER
	var fd uintptr
	var errno unix.Errno
	for _, f := range []uintptr{flags | unix.SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, flags} {
		fd, _, errno = unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, f, uintptr(unsafe.Pointer(&prog)))
		if errno != unix.EINVAL {
			break
		}
	}
	runtime.KeepAlive(filter)
	switch errno {
	case 0:
		// Linux 6.6: the kernel switches to the listener on the caller's
		// CPU and back, instead of waking it wherever it slept — the
		// round trip of every notified write is most of its cost. Best
		// effort: older kernels refuse the ioctl.
		var f uint64 = unix.SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
		_, _, _ = unix.Syscall(unix.SYS_IOCTL, fd, unix.SECCOMP_IOCTL_NOTIF_SET_FLAGS, uintptr(f))
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

// Listener serves the notifying filter's listener.
type Listener struct {
	Fd      int
	Decider *Decider
	Writes  *Writes
	// Wake, when readable, runs OnWake (-1: no wake descriptor).
	Wake   int
	OnWake func()
	// Denied is called for each refused call before it is answered with
	// the rule's errno: a denial is reported before the agent's call
	// returns, so none is lost to an agent that exits right after.
	Denied func(pid int, den Denial)
	// Write is called for each write call before it is answered with
	// SECCOMP_USER_NOTIF_FLAG_CONTINUE (paths that cannot be read skip
	// it).
	Write func(*WriteRequest)

	epfd int
}

// Prepare makes the epoll instance Serve waits on. Call it before the
// watched processes run: an agent of the same uid may lower the server's
// RLIMIT_NOFILE (prlimit), and would then make poll(2) fail (EINVAL: more
// descriptors than the limit) and epoll_create1 (EMFILE); an epoll
// instance made before keeps working whatever the limit.
func (l *Listener) Prepare() error {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("epoll_create1: %w", err)
	}
	for i, fd := range []int{l.Fd, l.Wake} {
		if fd < 0 {
			continue
		}
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(i)}); err != nil {
			unix.Close(ep)
			return fmt.Errorf("epoll_ctl: %w", err)
		}
	}
	l.epfd = ep
	return nil
}

// Serve answers every notification: a call the errno filter refuses
// (Decider) with that errno, a write call the errno filter allows with
// CONTINUE — the kernel then decides it as if no filter were there —, and
// anything else, which cannot happen, with EPERM. It returns when every
// filtered task is gone or the listener fails. The callbacks must not block
// for long: the agent's call waits for them. The thread that serves must
// never make a call the filter notifies itself: nobody would answer it.
// Prepare must have been called.
func (l *Listener) Serve() {
	mems := memFiles{}
	defer mems.drop()
	evs := make([]unix.EpollEvent, 2)
	for {
		k, err := unix.EpollWait(l.epfd, evs, -1)
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			return
		}
		ready := false
		for _, e := range evs[:k] {
			switch {
			case e.Fd == 1:
				l.OnWake()
			case e.Events&unix.EPOLLIN != 0:
				ready = true
			case e.Events&(unix.EPOLLHUP|unix.EPOLLERR) != 0:
				return // no task uses the filter any more
			}
		}
		if !ready {
			continue
		}
		var n notif
		_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(l.Fd), unix.SECCOMP_IOCTL_NOTIF_RECV, uintptr(unsafe.Pointer(&n)))
		if errno == unix.EINTR || errno == unix.ENOENT {
			continue // ENOENT: the task died before we read its call
		}
		if errno != 0 {
			return
		}
		resp := notifResp{ID: n.ID}
		den := l.Decider.Decide(n.Nr, n.Arch, n.Args)
		c := l.Writes.Call(n.Nr)
		if den.allowed && c != nil {
			if req := readRequest(l.Fd, &n, c, mems); req != nil && l.Write != nil {
				l.Write(req)
			}
			resp.Flags = unix.SECCOMP_USER_NOTIF_FLAG_CONTINUE
		} else {
			if !den.allowed && l.Denied != nil {
				l.Denied(int(n.Pid), den)
			}
			resp.Error = -int32(den.errno)
		}
		_, _, _ = unix.Syscall(unix.SYS_IOCTL, uintptr(l.Fd), unix.SECCOMP_IOCTL_NOTIF_SEND, uintptr(unsafe.Pointer(&resp)))
	}
}
