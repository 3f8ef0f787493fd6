package pid1

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// allThreads runs a raw syscall on every thread of the process. Credentials
// (capabilities, securebits, no_new_privs) are per thread on Linux, and the
// Go runtime runs on several: a change made on one thread only would leave
// the others — and any child forked from them — privileged. Requires a
// binary built with CGO_ENABLED=0.
func allThreads(trap, a1, a2, a3 uintptr) error {
	_, _, errno := syscall.AllThreadsSyscall(trap, a1, a2, a3)
	if errno != 0 {
		return errno
	}
	return nil
}

// setNoNewPrivs sets no_new_privs on the calling thread, the init's locked
// main thread: no execve can grant privileges again (setuid bits, file
// capabilities), and it allows unprivileged seccomp and Landlock. The
// other threads get it from the layers that follow, without an
// all-threads round of its own (issue 9): Landlock's all-threads
// enforcement sets it on each thread first (go-landlock, ABI < 8), and
// seccomp's SECCOMP_FILTER_FLAG_TSYNC, which the init always applies from
// this thread, copies the caller's no_new_privs to every thread (kernel
// seccomp_sync_threads). The forking thread checks it holds it before the
// fork (checkForkerCreds).
func setNoNewPrivs() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	return nil
}

// checkForkerCreds is the forking thread's last check before the agent's
// fork, on its own credentials, which the agent inherits: no_new_privs
// set, no ambient capability (cleared here again: one prctl on this thread
// alone), nothing inheritable, and no effective or permitted capability
// but keep.
func checkForkerCreds(keep uint64) error {
	if nnp, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0); err != nil || nnp != 1 {
		return fmt.Errorf("no_new_privs not set on the forking thread (%d, %v)", nnp, err)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_CAP_AMBIENT_CLEAR_ALL): %w", err)
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	eff := uint64(data[0].Effective) | uint64(data[1].Effective)<<32
	prm := uint64(data[0].Permitted) | uint64(data[1].Permitted)<<32
	inh := uint64(data[0].Inheritable) | uint64(data[1].Inheritable)<<32
	if eff&^keep != 0 || prm&^keep != 0 || inh != 0 {
		return fmt.Errorf("forking thread still holds capabilities: effective %#x permitted %#x inheritable %#x (may keep %#x)", eff, prm, inh, keep)
	}
	return nil
}

func lastCap() int {
	b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			return n
		}
	}
	return 63
}

// dropBoundingSet empties the bounding set of the calling thread, which
// must be locked to its goroutine and is the one that forks the agent. The
// bounding set only matters at execve, and only that thread will ever reach
// one, so the drop is made there alone (one cheap prctl per capability
// instead of an all-threads round each). Call it before dropCapabilities:
// it needs CAP_SETPCAP.
func dropBoundingSet() error {
	last := lastCap() // once, not per capability (issue 9)
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("prctl(PR_CAPBSET_DROP, %d): %w", c, err)
		}
	}
	return nil
}

// dropCapabilities empties the capability sets of every thread (ambient,
// inheritable, permitted, effective) but keep (a mask of permitted and
// effective capabilities the forker still needs to make the agent another
// uid, CAP_SETUID and CAP_SETGID, and to signal it, CAP_KILL), and locks
// the securebits so that uid 0 regains nothing at execve. The other threads keep a bounding set they
// can never use; the agent's execve as a non-root uid, with no file
// capability and an empty bounding set, leaves it no capability at all.
func dropCapabilities(keep uint64) error {
	const secbits = 1<<0 | 1<<1 | // SECBIT_NOROOT, _LOCKED
		1<<2 | 1<<3 | // SECBIT_NO_SETUID_FIXUP, _LOCKED
		1<<5 | // SECBIT_KEEP_CAPS_LOCKED (KEEP_CAPS off)
		1<<6 | 1<<7 // SECBIT_NO_CAP_AMBIENT_RAISE, _LOCKED
	if err := allThreads(unix.SYS_PRCTL, unix.PR_SET_SECUREBITS, secbits, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_SECUREBITS): %w", err)
	}
	// No all-threads PR_CAP_AMBIENT_CLEAR_ALL round (issue 9): capset
	// keeps only the ambient capabilities that stay both permitted and
	// inheritable (kernel cap_capset), and the inheritable set becomes
	// empty here, so every thread's ambient set is emptied with it. The
	// forking thread clears and checks its own again (checkForkerCreds).
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	data[0].Permitted, data[0].Effective = uint32(keep), uint32(keep)
	data[1].Permitted, data[1].Effective = uint32(keep>>32), uint32(keep>>32)
	if err := allThreads(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); err != nil {
		return fmt.Errorf("capset(0): %w", err)
	}
	return nil
}
