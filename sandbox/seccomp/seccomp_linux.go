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

// ErrNoNewPrivs is returned by [Apply] when the calling thread does not have
// no_new_privs set. Without it an unprivileged process cannot install a
// filter at all, and a privileged one could install it and then exec a
// setuid binary that escapes the filter's intent; the sandbox init sets it on
// every thread before calling Apply.
var ErrNoNewPrivs = errors.New("seccomp: no_new_privs is not set on the calling thread (set PR_SET_NO_NEW_PRIVS on all threads before Apply)")

// Apply installs the filter built from [Rules] on every thread of the
// calling process (SECCOMP_FILTER_FLAG_TSYNC). It must be the last hardening
// step before exec: after it, mount, unshare and the rest are gone for this
// process and everything it starts.
//
// Precondition: no_new_privs is set (see [ErrNoNewPrivs]). The kernel copies
// the caller's no_new_privs to the other threads during TSYNC.
//
// families are the profile's socket_families (RulesAllowing).
func Apply(families ...uint32) error {
	insts, err := Assemble(runtime.GOARCH, families...)
	if err != nil {
		return err
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return fmt.Errorf("seccomp: assemble: %w", err)
	}
	if len(raw) > 4096 { // BPF_MAXINSNS
		return fmt.Errorf("seccomp: filter has %d instructions, kernel limit is 4096", len(raw))
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		filter[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}

	// The no_new_privs check and the seccomp call must run on the same
	// thread: no_new_privs is per thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	nnp, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	if err != nil {
		return fmt.Errorf("seccomp: prctl(PR_GET_NO_NEW_PRIVS): %w", err)
	}
	if nnp != 1 {
		return ErrNoNewPrivs
	}
	r1, _, errno := unix.RawSyscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER,
		unix.SECCOMP_FILTER_FLAG_TSYNC, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(filter)
	if errno != 0 {
		switch errno {
		case unix.EINVAL, unix.ENOSYS:
			return fmt.Errorf("seccomp: kernel refused the filter (seccomp filter mode or TSYNC unsupported?): %w", errno)
		case unix.EACCES:
			return fmt.Errorf("seccomp: %w: %w", ErrNoNewPrivs, errno)
		}
		return fmt.Errorf("seccomp(SECCOMP_SET_MODE_FILTER, TSYNC): %w", errno)
	}
	if r1 != 0 {
		// With TSYNC a positive return is the id of a thread that could
		// not be synchronised (it already has a diverging filter); the
		// filter was not installed anywhere.
		return fmt.Errorf("seccomp: thread %d could not be synchronised (TSYNC); filter not installed", r1)
	}
	return nil
}
