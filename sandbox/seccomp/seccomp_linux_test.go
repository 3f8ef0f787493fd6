//go:build linux

package seccomp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/fedmem/fedmem/sandbox/seccomp/internal/int80"
	"golang.org/x/sys/unix"
)

// Every test here runs its attempt in a fresh child process (this test
// binary re-executed), so the filter never lands on the test runner. The
// child sets no_new_privs, applies the filter (or not, for the control run),
// makes ONE system call and prints the result as JSON. No root is needed:
// no_new_privs and seccomp work unprivileged.
//
// The arguments of each attempt are chosen so that without the filter the
// kernel answers something other than the filter's errno (EFAULT, EBADF,
// EINVAL…) and has no side effect. The control run proves it: an assertion
// "got EPERM" could otherwise be the kernel's own refusal of an unprivileged
// caller rather than the filter's.

const (
	envChild  = "FEDMEM_SECCOMP_TEST_CHILD"  // attempt name
	envFilter = "FEDMEM_SECCOMP_TEST_FILTER" // "1": apply the filter first
)

type result struct {
	Ret    uint64 `json:"ret"`
	Errno  int    `json:"errno"`
	Err    string `json:"err,omitempty"`
	Detail string `json:"detail,omitempty"`
}

type childEnv struct {
	devNull int // opened before the filter
	ptmx    int // opened before the filter, -1 if unavailable
}

type attempt struct {
	name string
	run  func(e *childEnv) result
	// want is the errno expected under the filter; 0 means the call must
	// succeed (an allowed control).
	want syscall.Errno
	// ctlMayEPERM: without the filter the kernel itself refuses an
	// unprivileged caller with EPERM before looking at the arguments, so
	// the control run cannot tell the two apart unless run as root.
	ctlMayEPERM bool
	// noControl: the unfiltered result says nothing (e.g. x32 disabled).
	noControl bool
}

func nr(name string) uintptr {
	n, ok := SyscallNumber(runtime.GOARCH, name)
	if !ok {
		panic("no syscall " + name)
	}
	return uintptr(n)
}

// okSocket opens (and closes) a socket of an allowed family.
func okSocket(family, typ uintptr) func(*childEnv) result {
	return func(*childEnv) result {
		r, _, e := syscall.Syscall(nr("socket"), family, typ, 0)
		if e == 0 {
			syscall.Close(int(r))
			r = 0
		}
		return result{Ret: uint64(r), Errno: int(e)}
	}
}

func raw(name string, args ...uintptr) func(*childEnv) result {
	return func(*childEnv) result {
		var a [6]uintptr
		copy(a[:], args)
		r, _, e := syscall.Syscall6(nr(name), a[0], a[1], a[2], a[3], a[4], a[5])
		return result{Ret: uint64(r), Errno: int(e)}
	}
}

const (
	badFD      = ^uintptr(0) // -1
	allBits32  = uintptr(0xffffffff)
	cloneParnt = 0x8000 // CLONE_PARENT: invalid for unshare -> EINVAL before any permission check
	cloneSigh  = 0x800  // CLONE_SIGHAND without CLONE_VM -> EINVAL first thing in copy_process
	sigchld    = uintptr(syscall.SIGCHLD)
)

// rawClone calls clone(2) with flags and, should a child appear, makes it
// exit at once (it shares nothing with the Go runtime but a copy of memory).
func rawClone(flags uintptr) result {
	r, _, e := syscall.RawSyscall6(nr("clone"), flags, 0, 0, 0, 0, 0)
	if e == 0 && r == 0 {
		syscall.RawSyscall(nr("exit_group"), 0, 0, 0)
	}
	res := result{Ret: uint64(r), Errno: int(e)}
	if e == 0 {
		// A raw fork of a Go process is a copy of one thread of a
		// multi-threaded runtime: should the parent's runtime have asked
		// for a preemption at that instant, the child blocks in the
		// scheduler instead of reaching exit_group (seen as a CI hang).
		// What this attempt proves is that clone was allowed — it
		// returned a pid — so a child that does not exit in time is
		// killed, not waited for forever.
		var ws syscall.WaitStatus
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			pid, err := syscall.Wait4(int(r), &ws, syscall.WNOHANG, nil)
			if err != nil {
				res.Err = "wait4: " + err.Error()
				break
			}
			if pid == int(r) {
				if !ws.Exited() || ws.ExitStatus() != 0 {
					res.Err = fmt.Sprintf("child status %v", ws)
				}
				break
			}
			if time.Now().After(deadline) {
				syscall.Kill(int(r), syscall.SIGKILL)
				syscall.Wait4(int(r), &ws, 0, nil)
				break
			}
		}
	}
	return res
}

func nsAttempts() []attempt {
	flags := []struct {
		name string
		v    uintptr
	}{
		{"user", cloneNewUser}, {"ns", cloneNewNS}, {"pid", cloneNewPID}, {"net", cloneNewNet},
		{"uts", cloneNewUTS}, {"ipc", cloneNewIPC}, {"cgroup", cloneNewCgroup}, {"time", cloneNewTime},
	}
	var out []attempt
	for _, f := range flags {
		out = append(out, attempt{name: "unshare-new" + f.name, run: raw("unshare", f.v|cloneParnt), want: syscall.EPERM})
		if f.v != cloneNewTime {
			v := f.v
			out = append(out, attempt{name: "clone-new" + f.name, run: func(*childEnv) result { return rawClone(v | cloneSigh | sigchld) }, want: syscall.EPERM})
		}
	}
	// Exactly what an agent would call; Go processes are multi-threaded,
	// so without the filter the kernel says EINVAL.
	out = append(out, attempt{name: "unshare-newuser-plain", run: raw("unshare", cloneNewUser), want: syscall.EPERM})
	return out
}

func attempts() []attempt {
	as := nsAttempts()
	as = append(as,
		attempt{name: "clone3", run: raw("clone3", 0, 0), want: syscall.ENOSYS},
		attempt{name: "setns", run: raw("setns", badFD, 0), want: syscall.EPERM},
		attempt{name: "mount", run: raw("mount", 0, 0, 0, 0, 0), want: syscall.EPERM},
		attempt{name: "umount2", run: raw("umount2", 0, 0xffff), want: syscall.EPERM},
		attempt{name: "pivot_root", run: raw("pivot_root", 0, 0), want: syscall.EPERM, ctlMayEPERM: true},
		attempt{name: "move_mount", run: raw("move_mount", badFD, 0, badFD, 0, allBits32), want: syscall.EPERM, ctlMayEPERM: true},
		attempt{name: "open_tree", run: raw("open_tree", badFD, 0, allBits32), want: syscall.EPERM},
		attempt{name: "open_tree_attr", run: raw("open_tree_attr", badFD, 0, allBits32, 0, 0), want: syscall.EPERM},
		attempt{name: "fsopen", run: raw("fsopen", 0, allBits32), want: syscall.EPERM, ctlMayEPERM: true},
		attempt{name: "fsconfig", run: raw("fsconfig", badFD, 0xff, 0, 0, 0), want: syscall.EPERM},
		attempt{name: "fsmount", run: raw("fsmount", badFD, allBits32, 0), want: syscall.EPERM, ctlMayEPERM: true},
		attempt{name: "fspick", run: raw("fspick", badFD, 0, allBits32), want: syscall.EPERM, ctlMayEPERM: true},
		attempt{name: "mount_setattr", run: raw("mount_setattr", badFD, 0, allBits32, 0, 0), want: syscall.EPERM},
		attempt{name: "ptrace", run: raw("ptrace", 16 /* PTRACE_ATTACH */, 0x3fffffff), want: syscall.EPERM},
		attempt{name: "process_vm_readv", run: raw("process_vm_readv", 1, 0, 0, 0, 0, 1), want: syscall.EPERM},
		attempt{name: "process_vm_writev", run: raw("process_vm_writev", 1, 0, 0, 0, 0, 1), want: syscall.EPERM},
		attempt{name: "pidfd_getfd", run: raw("pidfd_getfd", badFD, 0, 0), want: syscall.EPERM},
		attempt{name: "process_madvise", run: raw("process_madvise", badFD, 0, 0, 0, 0), want: syscall.EPERM},
		attempt{name: "keyctl", run: raw("keyctl", 0xffff), want: syscall.EPERM},
		attempt{name: "add_key", run: raw("add_key", 0, 0, 0, 0, 0), want: syscall.EPERM},
		attempt{name: "request_key", run: raw("request_key", 0, 0, 0, 0), want: syscall.EPERM},
		attempt{name: "bpf", run: raw("bpf", 0xffff, 0, 0), want: syscall.EPERM, ctlMayEPERM: true},
		attempt{name: "perf_event_open", run: raw("perf_event_open", 0, 0, badFD, badFD, 0xffff), want: syscall.EPERM},
		attempt{name: "userfaultfd", run: raw("userfaultfd", 0xffff), want: syscall.EPERM, ctlMayEPERM: true},
		attempt{name: "io_uring_setup", run: raw("io_uring_setup", 0, 0), want: syscall.EPERM, ctlMayEPERM: true},
		attempt{name: "io_uring_enter", run: raw("io_uring_enter", badFD, 0, 0, 0, 0, 0), want: syscall.EPERM, ctlMayEPERM: true},
		attempt{name: "io_uring_register", run: raw("io_uring_register", badFD, 0, 0, 0), want: syscall.EPERM, ctlMayEPERM: true},
		attempt{name: "open_by_handle_at", run: raw("open_by_handle_at", badFD, 0, 0), want: syscall.EPERM, ctlMayEPERM: true},
		attempt{name: "name_to_handle_at", run: raw("name_to_handle_at", badFD, 0, 0, 0, 0xffff), want: syscall.EPERM},
		attempt{name: "kexec_load", run: raw("kexec_load", 0, 0, 0, allBits32), want: syscall.EPERM, ctlMayEPERM: true},
		attempt{name: "kexec_file_load", run: raw("kexec_file_load", badFD, badFD, 0, 0, 0xffff), want: syscall.EPERM, ctlMayEPERM: true},
		attempt{name: "init_module", run: raw("init_module", 0, 0, 0), want: syscall.EPERM, ctlMayEPERM: true},
		attempt{name: "finit_module", run: raw("finit_module", badFD, 0, 0xffff), want: syscall.EPERM, ctlMayEPERM: true},
		attempt{name: "delete_module", run: raw("delete_module", 0, 0), want: syscall.EPERM, ctlMayEPERM: true},
		attempt{name: "acct", run: raw("acct", 1), want: syscall.EPERM, ctlMayEPERM: true},
		attempt{name: "swapon", run: raw("swapon", 0, allBits32), want: syscall.EPERM},
		attempt{name: "swapoff", run: raw("swapoff", 0), want: syscall.EPERM, ctlMayEPERM: true},
		attempt{name: "reboot", run: raw("reboot", 0, 0, 0, 0), want: syscall.EPERM, ctlMayEPERM: true},
		attempt{name: "settimeofday", run: raw("settimeofday", 0, 1), want: syscall.EPERM},
		attempt{name: "clock_settime", run: raw("clock_settime", 0xffff, 0), want: syscall.EPERM},
		attempt{name: "adjtimex", run: raw("adjtimex", 0), want: syscall.EPERM},
		attempt{name: "clock_adjtime", run: raw("clock_adjtime", 0xffff, 0), want: syscall.EPERM},
		attempt{name: "syslog", run: raw("syslog", 0xffff, 0, 0), want: syscall.EPERM, ctlMayEPERM: true},
		attempt{name: "quotactl", run: raw("quotactl", 0xff, 0, 0, 0), want: syscall.EPERM},
		attempt{name: "quotactl_fd", run: raw("quotactl_fd", badFD, 0xff, 0, 0), want: syscall.EPERM},
		attempt{name: "lookup_dcookie", run: raw("lookup_dcookie", 0, 0, 0), want: syscall.EPERM},
		attempt{name: "vhangup", run: raw("vhangup"), want: syscall.EPERM, ctlMayEPERM: true},
		attempt{name: "personality-addr-no-randomize", run: raw("personality", 0x0040000), want: syscall.EPERM},
		attempt{name: "personality-read-implies-exec", run: raw("personality", 0x0400000), want: syscall.EPERM},
		attempt{name: "nfsservctl", run: raw("nfsservctl", 0, 0, 0), want: syscall.EPERM},
		attempt{name: "fallocate", run: raw("fallocate", badFD, 1 /* FALLOC_FL_KEEP_SIZE */, 0, 1<<20), want: syscall.EOPNOTSUPP},
		// socket-families: a type past SOCK_MAX makes the unfiltered kernel
		// answer EINVAL for any family it knows, before creating anything;
		// the filter refuses the family first. Families: AF_VSOCK (40),
		// AF_PACKET (17), AF_ALG (38), AF_X25 (9); the high word is thrown
		// away by the kernel and must not hide the family.
		attempt{name: "socket-vsock", run: raw("socket", 40, 0xff, 0), want: syscall.EAFNOSUPPORT},
		attempt{name: "socket-packet", run: raw("socket", 17, 0xff, 0), want: syscall.EAFNOSUPPORT},
		attempt{name: "socket-alg", run: raw("socket", 38, 0xff, 0), want: syscall.EAFNOSUPPORT},
		attempt{name: "socket-x25-highword", run: raw("socket", 0x100000009, 0xff, 0), want: syscall.EAFNOSUPPORT},
		attempt{name: "socketpair-vsock", run: raw("socketpair", 40, 0xff, 0, 0), want: syscall.EAFNOSUPPORT},

		// Terminal injection: on /dev/null the unfiltered kernel says
		// ENOTTY; the filter must refuse every spelling of the cmd.
		attempt{name: "ioctl-tiocsti", run: ioctl(0x5412), want: syscall.EPERM},
		attempt{name: "ioctl-tiocsti-64bit", run: ioctl(0x100005412), want: syscall.EPERM},
		attempt{name: "ioctl-tiocsti-highbits", run: ioctl(0xffffffff00005412), want: syscall.EPERM},
		attempt{name: "ioctl-tioclinux", run: ioctl(0x541C), want: syscall.EPERM},

		// Allowed controls: must still work under the filter.
		attempt{name: "ok-fork", run: func(*childEnv) result { return rawClone(sigchld) }},
		attempt{name: "ok-exec", run: okExec},
		attempt{name: "ok-thread", run: okThread},
		attempt{name: "ok-glibc-pthread", run: okGlibcPthread},
		attempt{name: "ok-open-write", run: okOpenWrite},
		attempt{name: "ok-tiocgwinsz", run: okTIOCGWINSZ},
		attempt{name: "ok-unshare-files", run: raw("unshare", 0x400 /* CLONE_FILES */)},
		attempt{name: "ok-personality-query", run: raw("personality", 0xffffffff)},
		attempt{name: "ok-socket-unix", run: okSocket(1 /* AF_UNIX */, 1 /* SOCK_STREAM */)},
		attempt{name: "ok-socket-inet", run: okSocket(2 /* AF_INET */, 2 /* SOCK_DGRAM */)},
		attempt{name: "ok-socket-inet6", run: okSocket(10 /* AF_INET6 */, 2 /* SOCK_DGRAM */)},
		attempt{name: "ok-socket-netlink", run: okSocket(16 /* AF_NETLINK */, 3 /* SOCK_RAW */)},
	)
	// suid-sgid: a NULL path makes the unfiltered kernel answer EFAULT
	// (EBADF for fchmod's bad fd); the filter refuses the set-id mode
	// first. openat2 gets ENOSYS (the control: EBADF).
	const wr, creat, tmpfile = 0x1, 0x40, 0x400000
	as = append(as,
		attempt{name: "fchmod-setuid", run: raw("fchmod", badFD, 0o4755), want: syscall.EPERM},
		attempt{name: "fchmodat-setgid", run: raw("fchmodat", badFD, 0, 0o2755), want: syscall.EPERM},
		attempt{name: "fchmodat2-setuid", run: raw("fchmodat2", badFD, 0, 0o4755, 0), want: syscall.EPERM},
		attempt{name: "openat-creat-setuid", run: raw("openat", badFD, 0, wr|creat, 0o4755), want: syscall.EPERM},
		attempt{name: "openat-tmpfile-setgid", run: raw("openat", badFD, 0, wr|tmpfile, 0o2755), want: syscall.EPERM},
		attempt{name: "mkdirat-setgid", run: raw("mkdirat", badFD, 0, 0o2755), want: syscall.EPERM},
		attempt{name: "mknodat-setuid", run: raw("mknodat", badFD, 0, syscall.S_IFREG|0o4755, 0), want: syscall.EPERM},
		attempt{name: "openat2", run: raw("openat2", badFD, 0, 0, 0), want: syscall.ENOSYS},
		attempt{name: "ok-modes-without-setid", run: okModes},
	)
	if runtime.GOARCH == "amd64" {
		as = append(as,
			attempt{name: "chmod-setuid", run: raw("chmod", 0, 0o4755), want: syscall.EPERM},
			attempt{name: "open-creat-setgid", run: raw("open", 0, wr|creat, 0o6755), want: syscall.EPERM},
			attempt{name: "creat-setuid", run: raw("creat", 0, 0o4755), want: syscall.EPERM},
			attempt{name: "mkdir-setgid", run: raw("mkdir", 0, 0o2775), want: syscall.EPERM},
			attempt{name: "mknod-setgid", run: raw("mknod", 0, syscall.S_IFREG|0o2755, 0), want: syscall.EPERM},
		)
	}
	if runtime.GOARCH == "amd64" {
		// x32 spelling of unshare(CLONE_NEWNS). Without the filter the
		// answer depends on CONFIG_X86_X32_ABI, so there is no control.
		as = append(as, attempt{name: "x32-unshare", want: syscall.ENOSYS, noControl: true,
			run: func(*childEnv) result {
				r, _, e := syscall.Syscall(x32SyscallBit|nr("unshare"), cloneNewNS|cloneParnt, 0, 0)
				return result{Ret: uint64(r), Errno: int(e)}
			}})
	}
	return as
}

func ioctl(cmd uint64) func(*childEnv) result {
	return func(e *childEnv) result {
		var b byte = 'x'
		r, _, en := syscall.Syscall(nr("ioctl"), uintptr(e.devNull), uintptr(cmd), uintptr(unsafe.Pointer(&b)))
		return result{Ret: uint64(r), Errno: int(en)}
	}
}

func okExec(*childEnv) result {
	// fork, pipe and exec inside glibc's /bin/sh.
	out, err := exec.Command("/bin/sh", "-c", "/bin/echo fedmem | /bin/cat").Output()
	if err != nil {
		return errResult(err)
	}
	if strings.TrimSpace(string(out)) != "fedmem" {
		return result{Errno: int(syscall.EIO), Err: "unexpected output " + string(out)}
	}
	return result{}
}

// okGlibcPthread: glibc (2.34+) creates threads with clone3 first and
// falls back to clone on ENOSYS; a threaded C program must keep working.
func okGlibcPthread(*childEnv) result {
	py, err := exec.LookPath("python3")
	if err != nil {
		return result{Detail: "skip: no python3"}
	}
	out, err := exec.Command(py, "-c", "import threading\nr=[]\nt=threading.Thread(target=lambda: r.append(1))\nt.start(); t.join(); print(len(r))").Output()
	if err != nil {
		return errResult(err)
	}
	if strings.TrimSpace(string(out)) != "1" {
		return result{Errno: int(syscall.EIO), Err: "thread did not run: " + string(out)}
	}
	return result{Detail: "python3 thread ran"}
}

func okThread(*childEnv) result {
	mainTID := unix.Gettid()
	ch := make(chan int)
	go func() {
		runtime.LockOSThread() // force a dedicated (possibly new) thread
		ch <- unix.Gettid()
	}()
	// Force the runtime to create more threads too.
	done := make(chan struct{})
	for i := 0; i < 4; i++ {
		go func() { runtime.LockOSThread(); done <- struct{}{} }()
	}
	for i := 0; i < 4; i++ {
		<-done
	}
	tid := <-ch
	if tid == mainTID {
		return result{Errno: int(syscall.EIO), Err: "goroutine ran on the main thread"}
	}
	return result{Detail: fmt.Sprintf("main %d other %d", mainTID, tid)}
}

func okOpenWrite(*childEnv) result {
	dir := os.Getenv("FEDMEM_SECCOMP_TEST_DIR")
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("hello"), 0o600); err != nil {
		return errResult(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return errResult(err)
	}
	if string(b) != "hello" {
		return result{Errno: int(syscall.EIO), Err: "read back " + string(b)}
	}
	return result{}
}

// okModes: modes without a set-id bit still work under the suid-sgid
// rule — create, chmod, fchmod, mkdir, mknod (a FIFO) — and an open
// without O_CREAT is not refused whatever its (ignored) mode says.
func okModes(*childEnv) result {
	dir := os.Getenv("FEDMEM_SECCOMP_TEST_DIR")
	p := filepath.Join(dir, "m")
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CREAT|unix.O_CLOEXEC, 0o755)
	if err != nil {
		return errResult(err)
	}
	defer unix.Close(fd)
	steps := []func() error{
		func() error { return unix.Fchmod(fd, 0o644) },
		func() error { return unix.Fchmodat(unix.AT_FDCWD, p, 0o1755, 0) },
		func() error { return unix.Mkdir(filepath.Join(dir, "d"), 0o1777) },
		func() error { return unix.Mknod(filepath.Join(dir, "fifo"), unix.S_IFIFO|0o644, 0) },
		func() error {
			fd2, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0o4755) // mode ignored
			if err == nil {
				unix.Close(fd2)
			}
			return err
		},
	}
	for i, f := range steps {
		if err := f(); err != nil {
			return result{Errno: int(err.(syscall.Errno)), Err: fmt.Sprintf("step %d: %v", i, err)}
		}
	}
	return result{}
}

func okTIOCGWINSZ(e *childEnv) result {
	if e.ptmx < 0 {
		return result{Errno: int(syscall.ENODEV), Err: "/dev/ptmx unavailable"}
	}
	ws, err := unix.IoctlGetWinsize(e.ptmx, unix.TIOCGWINSZ)
	if err != nil {
		return errResult(err)
	}
	return result{Detail: fmt.Sprintf("%dx%d", ws.Col, ws.Row)}
}

func errResult(err error) result {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return result{Errno: int(syscall.EIO), Err: fmt.Sprintf("%v: %s", err, ee.Stderr)}
	}
	var en syscall.Errno
	if e, ok := err.(syscall.Errno); ok {
		en = e
	} else if pe, ok := err.(*os.PathError); ok {
		en, _ = pe.Err.(syscall.Errno)
	}
	if en == 0 {
		en = syscall.EIO
	}
	return result{Errno: int(en), Err: err.Error()}
}

// special child modes that are not single attempts.
var specials = map[string]func() result{
	"tsync":             childTSync,
	"apply-without-nnp": childNoNNP,
	"int80-getpid":      childInt80,
}

// childInt80 makes the i386 getpid (20) through int $0x80, after applying
// the filter when asked. The filter must kill the process: a deny-list in
// x86_64 numbers means nothing to the i386 table (unshare is 310 there).
func childInt80() result {
	runtime.LockOSThread()
	if os.Getenv(envFilter) == "1" {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			return errResult(err)
		}
		if err := Apply(); err != nil {
			return result{Errno: int(syscall.EIO), Err: err.Error()}
		}
	}
	r := int80.Syscall(20, 0, 0, 0)
	return result{Ret: uint64(r), Detail: strconv.Itoa(os.Getpid())}
}

func TestMain(m *testing.M) {
	if name := os.Getenv(envChild); name != "" {
		os.Exit(childMain(name))
	}
	os.Exit(m.Run())
}

func childMain(name string) int {
	emit := func(r result) int {
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
		return 0
	}
	if f, ok := specials[name]; ok {
		return emit(f())
	}
	var at *attempt
	for _, a := range attempts() {
		if a.name == name {
			a := a
			at = &a
		}
	}
	if at == nil {
		fmt.Fprintln(os.Stderr, "unknown attempt", name)
		return 2
	}
	env := &childEnv{ptmx: -1}
	var err error
	if env.devNull, err = unix.Open("/dev/null", unix.O_RDWR|unix.O_CLOEXEC, 0); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0); err == nil {
		env.ptmx = fd
	}
	// The attempt and the filter setup run on one locked thread, so the
	// attempt is made by the thread that set no_new_privs and installed
	// the filter (TSYNC has its own test).
	runtime.LockOSThread()
	if os.Getenv(envFilter) == "1" {
		if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
			fmt.Fprintln(os.Stderr, "PR_SET_NO_NEW_PRIVS:", err)
			return 2
		}
		if err := Apply(); err != nil {
			fmt.Fprintln(os.Stderr, "Apply:", err)
			return 2
		}
	}
	return emit(at.run(env))
}

// childTSync: a thread that exists before Apply must be filtered too.
func childTSync() result {
	runtime.LockOSThread()
	mainTID := unix.Gettid()
	type report struct {
		tid, nnp int
		errno    syscall.Errno
	}
	ready, goAhead, out := make(chan int), make(chan struct{}), make(chan report)
	go func() {
		runtime.LockOSThread() // this goroutine owns its thread from here on
		ready <- unix.Gettid()
		<-goAhead
		nnp, _ := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
		_, _, e := syscall.RawSyscall(nr("unshare"), cloneNewNS|cloneParnt, 0, 0)
		out <- report{tid: unix.Gettid(), nnp: nnp, errno: e}
	}()
	otherTID := <-ready
	// no_new_privs only on this thread: the kernel copies it to the
	// others as part of TSYNC.
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return errResult(err)
	}
	if err := Apply(); err != nil {
		return result{Errno: int(syscall.EIO), Err: err.Error()}
	}
	close(goAhead)
	r := <-out
	detail := fmt.Sprintf("main=%d other=%d(%d) nnp=%d", mainTID, otherTID, r.tid, r.nnp)
	if otherTID == mainTID || r.tid != otherTID {
		return result{Errno: int(syscall.EIO), Err: "thread identity: " + detail}
	}
	if r.nnp != 1 {
		return result{Errno: int(syscall.EIO), Err: "no_new_privs not propagated: " + detail}
	}
	return result{Errno: int(r.errno), Detail: detail}
}

// childNoNNP: Apply without no_new_privs must fail and install nothing.
func childNoNNP() result {
	runtime.LockOSThread()
	if v, _ := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0); v == 1 {
		return result{Detail: "skip: no_new_privs inherited from the test environment"}
	}
	err := Apply()
	status, _ := os.ReadFile("/proc/thread-self/status")
	mode := ""
	for _, l := range strings.Split(string(status), "\n") {
		if strings.HasPrefix(l, "Seccomp:") {
			mode = strings.TrimSpace(strings.TrimPrefix(l, "Seccomp:"))
		}
	}
	if err == nil {
		return result{Detail: "seccomp=" + mode}
	}
	return result{Errno: int(syscall.EPERM), Err: err.Error(), Detail: "seccomp=" + mode}
}

func runChild(t *testing.T, name string, filter bool) result {
	t.Helper()
	r, err, stderr := runChildStatus(t, name, filter)
	if err != nil {
		t.Fatalf("child %s (filter=%v): %v\nstderr: %s", name, filter, err, stderr)
	}
	return r
}

// runChildStatus runs a child and returns its result, or the error from
// Wait (e.g. killed by a signal).
func runChildStatus(t *testing.T, name string, filter bool) (result, error, string) {
	t.Helper()
	// A stuck child fails the test after a minute instead of stalling the
	// whole run; the runtime settings keep the Go runtime quiet around the
	// raw forks some attempts make.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.WaitDelay = 5 * time.Second
	f := "0"
	if filter {
		f = "1"
	}
	cmd.Env = append(os.Environ(), envChild+"="+name, envFilter+"="+f, "FEDMEM_SECCOMP_TEST_DIR="+t.TempDir(),
		"GOGC=off", "GOMAXPROCS=1", "GODEBUG=asyncpreemptoff=1")
	// No controlling terminal: vhangup in an unfiltered root child must
	// not hang up the terminal of whoever runs the tests.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return result{}, err, stderr.String()
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var r result
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		t.Fatalf("child %s: bad output %q: %v (stderr %s)", name, stdout.String(), err, stderr.String())
	}
	return r, nil, stderr.String()
}

func TestRulesInChildProcesses(t *testing.T) {
	root := os.Geteuid() == 0
	for _, a := range attempts() {
		t.Run(a.name, func(t *testing.T) {
			got := runChild(t, a.name, true)
			if syscall.Errno(got.Errno) != a.want {
				t.Fatalf("with filter: errno %d (%v) %s, want %d (%v)", got.Errno, syscall.Errno(got.Errno), got.Err, int(a.want), a.want)
			}
			if a.want == 0 || a.noControl {
				return
			}
			ctl := runChild(t, a.name, false)
			switch {
			case syscall.Errno(ctl.Errno) != a.want:
				// The kernel's own answer differs: the filter made the refusal.
			case a.ctlMayEPERM && !root && ctl.Errno == int(syscall.EPERM):
				t.Logf("control inconclusive unprivileged: kernel itself answers EPERM (run as root to check)")
			default:
				t.Fatalf("control without filter also gave %v: this attempt does not prove the filter refused it", syscall.Errno(ctl.Errno))
			}
		})
	}
}

// Every system call named in Rules is exercised by a child attempt.
func TestEveryRuleHasAChildAttempt(t *testing.T) {
	have := map[string]bool{}
	for _, a := range attempts() {
		have[a.name] = true
	}
	for _, r := range Rules {
		for _, s := range r.Syscalls {
			ok := have[s]
			for n := range have {
				if strings.HasPrefix(n, s+"-") || strings.HasPrefix(n, "unshare-") && s == "unshare" ||
					strings.HasPrefix(n, "clone-") && s == "clone" || strings.HasPrefix(n, "ioctl-") && s == "ioctl" {
					ok = true
				}
			}
			if !ok {
				t.Errorf("rule %s: no child attempt for %s", r.Name, s)
			}
		}
	}
}

func TestTSyncFiltersThreadsCreatedBeforeApply(t *testing.T) {
	got := runChild(t, "tsync", false)
	if got.Err != "" || syscall.Errno(got.Errno) != syscall.EPERM {
		t.Fatalf("pre-existing thread: errno %v err %q (%s), want EPERM from the filter", syscall.Errno(got.Errno), got.Err, got.Detail)
	}
	t.Log(got.Detail)
}

func TestApplyRequiresNoNewPrivs(t *testing.T) {
	got := runChild(t, "apply-without-nnp", false)
	if strings.HasPrefix(got.Detail, "skip:") {
		t.Skip(got.Detail)
	}
	if got.Err == "" {
		t.Fatalf("Apply without no_new_privs succeeded (%s)", got.Detail)
	}
	if got.Err != ErrNoNewPrivs.Error() {
		t.Fatalf("Apply without no_new_privs: %q, want %q", got.Err, ErrNoNewPrivs)
	}
	if got.Detail != "seccomp=0" {
		t.Fatalf("a filter was installed despite the error: %s", got.Detail)
	}
}

// TestForeignABIKillsProcess makes a real i386 system call from a 64-bit
// process: without the filter it works (on kernels with IA32 emulation),
// with it the process dies by SIGSYS before the call runs.
func TestForeignABIKillsProcess(t *testing.T) {
	if !int80.Available {
		t.Skip("int $0x80 only exists on amd64")
	}
	ctl, err, _ := runChildStatus(t, "int80-getpid", false)
	if err != nil {
		t.Skipf("int $0x80 unusable on this kernel (IA32 emulation off?): %v", err)
	}
	if strconv.FormatUint(ctl.Ret, 10) != ctl.Detail {
		t.Skipf("int $0x80 getpid returned %d, not the pid %s: IA32 emulation disabled", int64(ctl.Ret), ctl.Detail)
	}
	got, err, stderr := runChildStatus(t, "int80-getpid", true)
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("i386 getpid under the filter was not stopped: result %+v err %v", got, err)
	}
	ws := ee.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGSYS {
		t.Fatalf("child status %v (stderr %s), want killed by SIGSYS", ws, stderr)
	}
}
