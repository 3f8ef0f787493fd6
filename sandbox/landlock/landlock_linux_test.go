//go:build linux

package landlock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Each test runs its operation in a fresh child process (this test binary
// re-executed) that applies the Landlock rules first, so the test runner is
// never confined. Every denial is checked twice: under Landlock it fails
// with the exact errno, and in a control child without Landlock the same
// operation succeeds — so the denial is Landlock's, not DAC's. No root needed.

const (
	envOp    = "FEDMEM_LL_TEST_OP"
	envApply = "FEDMEM_LL_TEST_APPLY"
	envRules = "FEDMEM_LL_TEST_RULES"
	envBase  = "FEDMEM_LL_TEST_BASE"
	envArg   = "FEDMEM_LL_TEST_ARG"
)

type childResult struct {
	Errno  int     `json:"errno"`
	Err    string  `json:"err,omitempty"`
	Status *Status `json:"status,omitempty"`
	Detail string  `json:"detail,omitempty"`
}

type env struct {
	ro, rw, rw2, arg string
}

func errnoOf(err error) int {
	if err == nil {
		return 0
	}
	var en syscall.Errno
	if errors.As(err, &en) {
		return int(en)
	}
	return int(syscall.EIO)
}

// fsOps act on one directory, which holds "file" and an empty "sub/".
var fsOps = map[string]func(dir string) error{
	"create": func(d string) error {
		fd, err := unix.Open(filepath.Join(d, "new"), unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		if err == nil {
			unix.Close(fd)
		}
		return err
	},
	"write": func(d string) error {
		fd, err := unix.Open(filepath.Join(d, "file"), unix.O_WRONLY|unix.O_APPEND|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		_, err = unix.Write(fd, []byte("x"))
		return err
	},
	"truncate": func(d string) error { return unix.Truncate(filepath.Join(d, "file"), 0) },
	"unlink":   func(d string) error { return unix.Unlink(filepath.Join(d, "file")) },
	"mkdir":    func(d string) error { return unix.Mkdir(filepath.Join(d, "newdir"), 0o755) },
	"rmdir":    func(d string) error { return unix.Rmdir(filepath.Join(d, "sub")) },
	"rename":   func(d string) error { return unix.Rename(filepath.Join(d, "file"), filepath.Join(d, "file2")) },
	"symlink":  func(d string) error { return unix.Symlink("file", filepath.Join(d, "link")) },
	"mkfifo":   func(d string) error { return unix.Mkfifo(filepath.Join(d, "fifo"), 0o644) },
	"read": func(d string) error {
		_, err := os.ReadFile(filepath.Join(d, "file"))
		return err
	},
	"readdir": func(d string) error {
		_, err := os.ReadDir(d)
		return err
	},
	// Not covered by Landlock: these succeed even in a read-only
	// hierarchy. The mount layer (MS_RDONLY) is what stops them.
	"chmod":  func(d string) error { return unix.Chmod(filepath.Join(d, "file"), 0o600) },
	"chown":  func(d string) error { return unix.Chown(filepath.Join(d, "file"), os.Getuid(), os.Getgid()) },
	"utimes": func(d string) error { return unix.UtimesNano(filepath.Join(d, "file"), make([]unix.Timespec, 2)) },
	"setxattr": func(d string) error {
		return unix.Setxattr(filepath.Join(d, "file"), "user.fedmem", []byte("x"), 0)
	},
}

var otherOps = map[string]func(e env) error{
	"rename-rw-to-ro": func(e env) error { return unix.Rename(filepath.Join(e.rw, "file"), filepath.Join(e.ro, "moved")) },
	"link-rw-to-ro":   func(e env) error { return unix.Link(filepath.Join(e.rw, "file"), filepath.Join(e.ro, "linked")) },
	"rename-ro-to-rw": func(e env) error { return unix.Rename(filepath.Join(e.ro, "file"), filepath.Join(e.rw, "moved")) },
	"link-ro-to-rw":   func(e env) error { return unix.Link(filepath.Join(e.ro, "file"), filepath.Join(e.rw, "linked")) },
	"rename-rw-to-rw2": func(e env) error {
		return unix.Rename(filepath.Join(e.rw, "file"), filepath.Join(e.rw2, "moved"))
	},
	"link-rw-to-rw2": func(e env) error { return unix.Link(filepath.Join(e.rw, "file"), filepath.Join(e.rw2, "linked")) },
	"write-rw-file": func(e env) error {
		return os.WriteFile(filepath.Join(e.ro, "allowed"), []byte("ok"), 0o644)
	},
	"write-devnull": func(env) error { return os.WriteFile("/dev/null", []byte("ok"), 0) },
	"exec": func(env) error {
		out, err := exec.Command("/bin/sh", "-c", "echo fedmem").Output()
		if err == nil && strings.TrimSpace(string(out)) != "fedmem" {
			return fmt.Errorf("output %q", out)
		}
		return err
	},
	"abstract-connect": func(e env) error { return connectAbstract(e.arg) },
	"abstract-own": func(env) error {
		// A listener created inside the domain stays reachable.
		name := fmt.Sprintf("@fedmem-ll-own-%d", os.Getpid())
		l, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(l)
		if err := unix.Bind(l, &unix.SockaddrUnix{Name: name}); err != nil {
			return err
		}
		if err := unix.Listen(l, 1); err != nil {
			return err
		}
		return connectAbstract(name)
	},
	"signal": func(e env) error {
		pid, _ := strconv.Atoi(e.arg)
		return unix.Kill(pid, 0)
	},
	"tcp-connect": func(e env) error {
		port, _ := strconv.Atoi(e.arg)
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Connect(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}})
	},
	"tcp-bind": func(env) error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}})
	},
	"unix-connect": func(e env) error {
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Connect(fd, &unix.SockaddrUnix{Name: e.arg})
	},
	"ptmx-ioctl-readonly": func(env) error { return ptmxIoctl(unix.O_RDONLY) },
	"ptmx-ioctl-device":   func(env) error { return ptmxIoctl(unix.O_RDWR) },
}

func connectAbstract(name string) error {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Connect(fd, &unix.SockaddrUnix{Name: name})
}

// ptmxIoctl opens /dev/ptmx in the domain and asks for the pty number
// (TIOCGPTN), an ioctl Landlock's IOCTL_DEV right governs.
func ptmxIoctl(mode int) error {
	fd, err := unix.Open("/dev/ptmx", mode|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer unix.Close(fd)
	_, err = unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	return err
}

func TestMain(m *testing.M) {
	if op := os.Getenv(envOp); op != "" {
		os.Exit(child(op))
	}
	os.Exit(m.Run())
}

func child(op string) int {
	out := func(r childResult) int {
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
		return 0
	}
	base := os.Getenv(envBase)
	e := env{ro: filepath.Join(base, "ro"), rw: filepath.Join(base, "rw"), rw2: filepath.Join(base, "rw2"), arg: os.Getenv(envArg)}

	var res childResult
	var tsync chan error
	if op == "tsync" {
		// A thread that exists before Apply must be confined too.
		tsync = make(chan error)
		ready := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			close(ready)
			<-tsync
			tsync <- fsOps["create"](e.ro)
		}()
		<-ready
	}
	if os.Getenv(envApply) == "1" {
		var r Rules
		if err := json.Unmarshal([]byte(os.Getenv(envRules)), &r); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		st, err := Apply(r)
		res.Status = &st
		if err != nil {
			res.Errno, res.Err = int(syscall.EINVAL), "Apply: "+err.Error()
			return out(res)
		}
	}
	var err error
	switch {
	case op == "tsync":
		tsync <- nil
		err = <-tsync
	case op == "status":
	case strings.Contains(op, ":"):
		name, where, _ := strings.Cut(op, ":")
		dir := e.ro
		if where == "rw" {
			dir = e.rw
		}
		f, ok := fsOps[name]
		if !ok {
			fmt.Fprintln(os.Stderr, "unknown op", op)
			return 2
		}
		err = f(dir)
	default:
		f, ok := otherOps[op]
		if !ok {
			fmt.Fprintln(os.Stderr, "unknown op", op)
			return 2
		}
		err = f(e)
	}
	res.Errno = errnoOf(err)
	if err != nil {
		res.Err = err.Error()
	}
	return out(res)
}

// fixture makes base/{ro,rw,rw2} with a "file" and an empty "sub/" in ro and
// rw, and ro/allowed for ReadWriteFiles.
func fixture(t *testing.T) string {
	t.Helper()
	base := t.TempDir()
	for _, d := range []string{"ro", "rw", "rw2"} {
		if err := os.MkdirAll(filepath.Join(base, d, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(base, d, "file"), []byte("data"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(base, "ro", "allowed"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return base
}

const missingPath = "/nonexistent-fedmem-landlock-test/dir"

func defaultRules(base string) Rules {
	return Rules{
		ReadOnly:       []string{"/"},
		ReadWrite:      []string{filepath.Join(base, "rw"), filepath.Join(base, "rw2"), missingPath},
		ReadWriteFiles: []string{filepath.Join(base, "ro", "allowed"), "/dev/null"},
	}
}

func run(t *testing.T, op string, apply bool, r Rules, base, arg string) childResult {
	t.Helper()
	rj, _ := json.Marshal(r)
	a := "0"
	if apply {
		a = "1"
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envOp+"="+op, envApply+"="+a, envRules+"="+string(rj), envBase+"="+base, envArg+"="+arg)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("child %s: %v\nstderr: %s", op, err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var res childResult
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("child %s: output %q: %v", op, stdout.String(), err)
	}
	return res
}

func needABI(t *testing.T, min int) int {
	t.Helper()
	abi := ABI()
	if abi < min {
		t.Skipf("host Landlock ABI %d < %d", abi, min)
	}
	return abi
}

type opCase struct {
	op   string
	want syscall.Errno // under Landlock; 0 = must succeed
	arg  string
	// rules overrides defaultRules when set.
	rules  func(base string) Rules
	minABI int // skip below this host ABI
}

// check runs c under Landlock and, for a denial, as a control without it.
func check(t *testing.T, c opCase) {
	t.Helper()
	needABI(t, max(c.minABI, 1))
	base := fixture(t)
	r := defaultRules(base)
	if c.rules != nil {
		r = c.rules(base)
	}
	got := run(t, c.op, true, r, base, c.arg)
	if strings.HasPrefix(got.Err, "Apply:") {
		t.Fatalf("%s: %s", c.op, got.Err)
	}
	if syscall.Errno(got.Errno) != c.want {
		t.Fatalf("%s under Landlock: errno %v (%s), want %v", c.op, syscall.Errno(got.Errno), got.Err, errnoName(c.want))
	}
	if c.want == 0 {
		return
	}
	ctl := run(t, c.op, false, r, fixture(t), c.arg)
	if ctl.Errno != 0 {
		t.Fatalf("%s without Landlock failed too (%v: %s): the test does not show Landlock denied it", c.op, syscall.Errno(ctl.Errno), ctl.Err)
	}
}

func errnoName(e syscall.Errno) string {
	if e == 0 {
		return "success"
	}
	return e.Error()
}

func TestReadOnlyHierarchyDeniesChanges(t *testing.T) {
	for _, op := range []string{"create", "write", "truncate", "unlink", "mkdir", "rmdir", "rename", "symlink", "mkfifo"} {
		t.Run(op, func(t *testing.T) {
			min := 1
			if op == "truncate" {
				min = 3 // truncate(2) is only restricted from ABI 3
			}
			check(t, opCase{op: op + ":ro", want: syscall.EACCES, minABI: min})
		})
	}
	for _, op := range []string{"read", "readdir"} {
		t.Run(op, func(t *testing.T) { check(t, opCase{op: op + ":ro"}) })
	}
}

func TestReadWriteHierarchyAllowsChanges(t *testing.T) {
	for _, op := range []string{"create", "write", "truncate", "unlink", "mkdir", "rmdir", "rename", "symlink", "mkfifo", "read", "readdir", "chmod", "utimes"} {
		t.Run(op, func(t *testing.T) { check(t, opCase{op: op + ":rw"}) })
	}
}

// Landlock has no access right for metadata changes: chmod, chown, utimes
// and xattrs on a read-only hierarchy go through. This test pins that gap
// (documented in docs/seccomp.md): it is why the read-only bind mounts, not
// Landlock, are the primary guard of the vault.
func TestMetadataChangesAreNotCoveredByLandlock(t *testing.T) {
	for _, op := range []string{"chmod", "chown", "utimes"} {
		t.Run(op, func(t *testing.T) { check(t, opCase{op: op + ":ro"}) })
	}
	t.Run("setxattr", func(t *testing.T) {
		needABI(t, 1)
		base := fixture(t)
		got := run(t, "setxattr:ro", true, defaultRules(base), base, "")
		ctl := run(t, "setxattr:ro", false, defaultRules(base), fixture(t), "")
		// The filesystem may not support user xattrs; either way Landlock
		// must give the same answer as no Landlock.
		if got.Errno != ctl.Errno {
			t.Fatalf("setxattr under Landlock: %v, without: %v; expected Landlock not to interfere", syscall.Errno(got.Errno), syscall.Errno(ctl.Errno))
		}
		if got.Errno == int(syscall.EACCES) {
			t.Fatalf("setxattr denied with EACCES: %s", got.Err)
		}
	})
}

// Moving or linking files across the boundary. EACCES wins when the
// destination lacks the right to create (or the source the right to
// remove); EXDEV is what Landlock answers when only the reparenting itself
// is refused: linking a read-only file into a writable directory would give
// it rights it does not have in its source hierarchy.
func TestCrossHierarchyRenameAndLink(t *testing.T) {
	cases := []opCase{
		{op: "rename-rw-to-ro", want: syscall.EACCES},
		{op: "link-rw-to-ro", want: syscall.EACCES},
		{op: "rename-ro-to-rw", want: syscall.EACCES},
		{op: "link-ro-to-rw", want: syscall.EXDEV, minABI: 2},
		{op: "rename-rw-to-rw2", minABI: 2},
		{op: "link-rw-to-rw2", minABI: 2},
	}
	for _, c := range cases {
		t.Run(c.op, func(t *testing.T) { check(t, c) })
	}
}

func TestReadWriteFiles(t *testing.T) {
	check(t, opCase{op: "write-rw-file"})
	check(t, opCase{op: "write-devnull"})
	check(t, opCase{op: "exec"})
}

func TestDeviceIoctl(t *testing.T) {
	if _, err := os.Stat("/dev/ptmx"); err != nil {
		t.Skip("/dev/ptmx unavailable")
	}
	// Opened read-only through the "/" rule: reading is allowed, ioctl on
	// the device is not (ABI ≥ 5).
	check(t, opCase{op: "ptmx-ioctl-readonly", want: syscall.EACCES, minABI: 5})
	// Listed in Devices: the ioctl works.
	check(t, opCase{op: "ptmx-ioctl-device", minABI: 5, rules: func(base string) Rules {
		r := defaultRules(base)
		r.Devices = []string{"/dev/ptmx", "/dev/pts"}
		return r
	}})
}

func TestAbstractUnixSocketScoped(t *testing.T) {
	needABI(t, 6)
	name := fmt.Sprintf("@fedmem-ll-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: name, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	check(t, opCase{op: "abstract-connect", arg: name, want: syscall.EPERM})
	check(t, opCase{op: "abstract-own"})
}

func TestSignalScoped(t *testing.T) {
	needABI(t, 6)
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() }()
	check(t, opCase{op: "signal", arg: strconv.Itoa(sleeper.Process.Pid), want: syscall.EPERM})
}

func TestNetworkNone(t *testing.T) {
	needABI(t, 4)
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	none := func(base string) Rules { r := defaultRules(base); r.NetworkNone = true; return r }
	check(t, opCase{op: "tcp-connect", arg: port, want: syscall.EACCES, rules: none})
	check(t, opCase{op: "tcp-bind", want: syscall.EACCES, rules: none})
	// Without NetworkNone TCP is left alone.
	check(t, opCase{op: "tcp-connect", arg: port})
}

func TestThreadsCreatedBeforeApplyAreConfined(t *testing.T) {
	check(t, opCase{op: "tsync", want: syscall.EACCES})
}

func TestStatusReportsWhatWasEnforced(t *testing.T) {
	abi := needABI(t, 1)
	base := fixture(t)
	r := defaultRules(base)
	r.NetworkNone = true
	got := run(t, "status", true, r, base, "")
	if got.Err != "" || got.Status == nil {
		t.Fatalf("status child: %+v", got)
	}
	st := *got.Status
	if st.ABI != abi || st.KernelABI < abi {
		t.Errorf("Status ABI %d (kernel %d), ABI() says %d", st.ABI, st.KernelABI, abi)
	}
	want := Status{
		ABI: abi, KernelABI: st.KernelABI, FS: true, Refer: abi >= 2, Truncate: abi >= 3, IoctlDev: abi >= 5,
		ResolveUnix: abi >= 9, NetTCP: abi >= 4, NetUDP: abi >= 10, ScopeAbstractUnix: abi >= 6, ScopeSignal: abi >= 6,
		Skipped: []string{missingPath},
	}
	gj, _ := json.Marshal(st)
	wj, _ := json.Marshal(want)
	if string(gj) != string(wj) {
		t.Errorf("Status:\n got  %s\n want %s", gj, wj)
	}
	if len(st.Describe()) < 2 || !strings.Contains(strings.Join(st.Describe(), "\n"), missingPath) {
		t.Errorf("Describe does not mention the skipped path: %q", st.Describe())
	}
}

func TestApplyRejectsBadPaths(t *testing.T) {
	for name, r := range map[string]Rules{
		"relative": {ReadOnly: []string{"/", "relative/dir"}},
		"empty":    {ReadWrite: []string{""}},
		"nul":      {Devices: []string{"/dev/\x00pts"}},
	} {
		t.Run(name, func(t *testing.T) {
			base := fixture(t)
			got := run(t, "status", true, r, base, "")
			if !strings.HasPrefix(got.Err, "Apply: landlock: Rules.") {
				t.Fatalf("Apply(%+v) = %q, want an error naming the field", r, got.Err)
			}
			if got.Status != nil && got.Status.ABI != 0 {
				t.Fatalf("error but Status says ABI %d enforced", got.Status.ABI)
			}
		})
	}
}

// A pathname unix socket served outside the domain: reachable when listed
// in UnixSockets; from ABI 9 on, refused otherwise.
func TestPathnameUnixSockets(t *testing.T) {
	needABI(t, 1)
	sock := filepath.Join(t.TempDir(), "proxy.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	listed := func(base string) Rules { r := defaultRules(base); r.UnixSockets = []string{sock}; return r }
	check(t, opCase{op: "unix-connect", arg: sock, rules: listed})
	if ABI() >= 9 {
		check(t, opCase{op: "unix-connect", arg: sock, want: syscall.EACCES})
	} else {
		t.Logf("ABI %d < 9: unlisted pathname sockets stay reachable", ABI())
		check(t, opCase{op: "unix-connect", arg: sock})
	}
}
