package seccomp

import (
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
)

var update = flag.Bool("update", false, "rewrite the generated table in docs/seccomp.md")

// These tests run the assembled program in x/net/bpf's interpreter, on any
// platform. The interpreter loads words big-endian while the kernel loads
// them in native (little-endian) order, so seccompData writes each 32-bit
// word the filter may load big-endian at the offset where a little-endian
// kernel would find it: the VM then sees exactly what the kernel would.
func seccompData(nr, auditArch uint32, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[0:], nr)
	binary.BigEndian.PutUint32(b[4:], auditArch)
	for i, a := range args {
		binary.BigEndian.PutUint32(b[16+8*i:], uint32(a))       // low word first in LE
		binary.BigEndian.PutUint32(b[16+8*i+4:], uint32(a>>32)) // high word
	}
	return b
}

type vm struct {
	t      *testing.T
	goarch string
	audit  uint32
	m      *bpf.VM
}

func newVM(t *testing.T, goarch string, families ...uint32) *vm {
	t.Helper()
	insts, err := Assemble(goarch, families...)
	if err != nil {
		t.Fatalf("Assemble(%s): %v", goarch, err)
	}
	if len(insts) > 4096 {
		t.Fatalf("Assemble(%s): %d instructions > BPF_MAXINSNS", goarch, len(insts))
	}
	m, err := bpf.NewVM(insts)
	if err != nil {
		t.Fatalf("bpf.NewVM(%s): %v", goarch, err)
	}
	a, _ := AuditArch(goarch)
	return &vm{t: t, goarch: goarch, audit: a, m: m}
}

// newNotifyVM assembles the notifying filter (with or without the write
// section) and loads it into x/net/bpf's interpreter; it also returns the
// program's length.
func newNotifyVM(t *testing.T, goarch string, writes bool) (*bpf.VM, int) {
	t.Helper()
	insts, err := AssembleNotify(goarch, writes)
	if err != nil {
		t.Fatalf("AssembleNotify(%s, %v): %v", goarch, writes, err)
	}
	if len(insts) > 4096 {
		t.Fatalf("AssembleNotify(%s, %v): %d instructions > BPF_MAXINSNS", goarch, writes, len(insts))
	}
	m, err := bpf.NewVM(insts)
	if err != nil {
		t.Fatalf("bpf.NewVM(%s): %v", goarch, err)
	}
	return m, len(insts)
}

func (v *vm) run(auditArch, nr uint32, args ...uint64) uint32 {
	v.t.Helper()
	out, err := v.m.Run(seccompData(nr, auditArch, args...))
	if err != nil {
		v.t.Fatalf("vm run nr=%d: %v", nr, err)
	}
	return uint32(out)
}

func (v *vm) nr(name string) uint32 {
	v.t.Helper()
	n, ok := SyscallNumber(v.goarch, name)
	if !ok {
		v.t.Fatalf("no %s on %s", name, v.goarch)
	}
	return uint32(n)
}

// call runs a native call by name.
func (v *vm) call(name string, args ...uint64) uint32 {
	v.t.Helper()
	return v.run(v.audit, v.nr(name), args...)
}

func retName(r uint32) string {
	switch {
	case r == retAllow:
		return "ALLOW"
	case r == retKillProcess:
		return "KILL_PROCESS"
	case r&0xffff0000 == retErrno:
		return Errno(r & 0xffff).String()
	}
	return "unknown"
}

func want(t *testing.T, what string, got, wantRet uint32) {
	t.Helper()
	if got != wantRet {
		t.Errorf("%s: filter returned %#x (%s), want %#x (%s)", what, got, retName(got), wantRet, retName(wantRet))
	}
}

var goarches = []string{"amd64", "arm64"}

func TestUnconditionalRulesDenyInVM(t *testing.T) {
	for _, ga := range goarches {
		v := newVM(t, ga)
		for _, r := range Rules {
			if r.Cond != nil {
				continue
			}
			for _, s := range r.Syscalls {
				if _, ok := SyscallNumber(ga, s); !ok {
					t.Errorf("%s: rule %s: %s has no number", ga, r.Name, s)
					continue
				}
				want(t, ga+" "+s, v.call(s, 1, 2, 3, 4, 5, 6), retErrno|uint32(r.Errno))
			}
		}
	}
}

func TestConditionalRulesInVM(t *testing.T) {
	newFlags := map[string]uint64{
		"CLONE_NEWNS": cloneNewNS, "CLONE_NEWCGROUP": cloneNewCgroup, "CLONE_NEWUTS": cloneNewUTS,
		"CLONE_NEWIPC": cloneNewIPC, "CLONE_NEWUSER": cloneNewUser, "CLONE_NEWPID": cloneNewPID,
		"CLONE_NEWNET": cloneNewNet,
	}
	const sigchld = 17
	// Flags Go's runtime and glibc use for threads and fork/vfork.
	threadFlags := uint64(0x100 | 0x200 | 0x400 | 0x800 | 0x10000 | 0x40000 | 0x80000 | 0x100000 | 0x200000)
	forkFlags := uint64(0x01000000 | 0x00200000 | sigchld)  // CHILD_SETTID|CHILD_CLEARTID
	vforkFlags := uint64(0x4000 | 0x100 | sigchld | 0x1000) // VFORK|VM|SIGCHLD|PIDFD
	perm := retErrno | uint32(EPERM)

	for _, ga := range goarches {
		v := newVM(t, ga)
		for name, f := range newFlags {
			want(t, ga+" clone "+name, v.call("clone", f|sigchld), perm)
			want(t, ga+" unshare "+name, v.call("unshare", f), perm)
			// High bits are thrown away by the kernel and must not hide the flag.
			want(t, ga+" clone hi|"+name, v.call("clone", 0xffffffff00000000|f|sigchld), perm)
		}
		want(t, ga+" unshare CLONE_NEWTIME", v.call("unshare", cloneNewTime), perm)
		want(t, ga+" unshare all", v.call("unshare", cloneNewAll), perm)
		want(t, ga+" clone thread", v.call("clone", threadFlags), retAllow)
		want(t, ga+" clone fork", v.call("clone", forkFlags), retAllow)
		want(t, ga+" clone vfork", v.call("clone", vforkFlags), retAllow)
		// A CLONE_NEW* value only in the high word is ignored by the kernel
		// (lower_32_bits), so it is allowed: denying it would be harmless
		// but shows the filter compares what the kernel compares.
		want(t, ga+" clone NEWUSER<<32", v.call("clone", cloneNewUser<<32|sigchld), retAllow)
		want(t, ga+" unshare CLONE_FILES|CLONE_FS", v.call("unshare", 0x400|0x200), retAllow)

		// ioctl: fd, cmd.
		for _, cmd := range []uint64{0x5412, 0x100005412, 0xffffffff00005412, 0x541c, 0xdead0000541c} {
			want(t, ga+" ioctl cmd "+hex(cmd), v.call("ioctl", 0, cmd), perm)
		}
		for _, cmd := range []uint64{0x5413 /* TIOCGWINSZ */, 0x5401 /* TCGETS */, 0x5412 << 32, 0x80045430} {
			want(t, ga+" ioctl cmd "+hex(cmd), v.call("ioctl", 0, cmd), retAllow)
		}
		// The condition is on arg 1; arg 0 equal to TIOCSTI must not matter.
		want(t, ga+" ioctl fd=0x5412 cmd=TCGETS", v.call("ioctl", 0x5412, 0x5401), retAllow)

		// personality.
		for _, p := range []uint64{0x0040000 /* ADDR_NO_RANDOMIZE */, 0x0400000 /* READ_IMPLIES_EXEC */, 0x0100000 /* MMAP_PAGE_ZERO */, 0x0040008} {
			want(t, ga+" personality "+hex(p), v.call("personality", p), perm)
		}
		for _, p := range safePersonalities {
			want(t, ga+" personality "+hex(uint64(p)), v.call("personality", uint64(p)), retAllow)
		}
		want(t, ga+" personality hi-only", v.call("personality", 0x0040000<<32), retAllow)
	}
}

func hex(v uint64) string { return fmt.Sprintf("%#x", v) }

func TestAllowedCallsInVM(t *testing.T) {
	for _, ga := range goarches {
		v := newVM(t, ga)
		for _, s := range []string{"read", "write", "openat", "close", "execve", "getpid", "mmap", "futex",
			"exit_group", "wait4", "landlock_restrict_self", "seccomp", "prctl", "connect"} {
			want(t, ga+" "+s, v.call(s), retAllow)
		}
	}
}

// TestSocketFamiliesInVM: socket(2) and socketpair(2) name only AF_UNIX,
// AF_INET, AF_INET6 and AF_NETLINK, plus what a profile adds; every other
// family, in any spelling of the high word, gets EAFNOSUPPORT.
func TestSocketFamiliesInVM(t *testing.T) {
	afnosupport := retErrno | uint32(EAFNOSUPPORT)
	for _, ga := range goarches {
		v := newVM(t, ga)
		for _, call := range []string{"socket", "socketpair"} {
			for _, fam := range []uint64{1, 2, 10, 16, 0xffffffff00000002, 1<<32 | 10} {
				want(t, fmt.Sprintf("%s %s(%#x)", ga, call, fam), v.call(call, fam, 1), retAllow)
			}
			for _, fam := range []uint64{0, 3, 9, 17, 38, 40, 44, 45, 46, 63, 64, 0xffff, 0xffffffff, 1<<32 | 40} {
				want(t, fmt.Sprintf("%s %s(%#x)", ga, call, fam), v.call(call, fam, 1), afnosupport)
			}
		}
		w := newVM(t, ga, 40, 17)
		for _, fam := range []uint64{1, 2, 10, 16, 17, 40} {
			want(t, fmt.Sprintf("%s +vsock,packet socket(%d)", ga, fam), w.call("socket", fam, 1), retAllow)
		}
		for _, fam := range []uint64{38, 9, 41} {
			want(t, fmt.Sprintf("%s +vsock,packet socket(%d)", ga, fam), w.call("socket", fam, 1), afnosupport)
		}
	}
}

func TestForeignArchitectureKills(t *testing.T) {
	amd := newVM(t, "amd64")
	// i386 via int 0x80 on x86_64: unshare is 310 there, getpid 20; both
	// would miss the native numbers, so the whole ABI is refused.
	for _, nr := range []string{"unshare", "getpid", "mount"} {
		n := uint32(arch.I386.SyscallNames[nr])
		want(t, "amd64 i386 "+nr, amd.run(uint32(arch.I386.ID), n), retKillProcess)
	}
	want(t, "amd64 given aarch64 arch", amd.run(uint32(arch.AARCH64.ID), amd.nr("unshare"), cloneNewUser), retKillProcess)

	a64 := newVM(t, "arm64")
	want(t, "arm64 arm32 compat", a64.run(uint32(arch.ARM.ID), uint32(arch.ARM.SyscallNames["unshare"]), cloneNewUser), retKillProcess)
	want(t, "arm64 given x86_64 arch", a64.run(uint32(arch.X86_64.ID), 272, cloneNewUser), retKillProcess)
}

func TestX32Refused(t *testing.T) {
	v := newVM(t, "amd64")
	enosys := retErrno | uint32(ENOSYS)
	for _, name := range []string{"unshare", "getpid", "mount", "ioctl"} {
		n, ok := arch.X32.SyscallNames[name]
		if !ok {
			t.Fatalf("x32 table lacks %s", name)
		}
		want(t, "x32 "+name, v.run(v.audit, uint32(n|x32SyscallBit), cloneNewUser), enosys)
	}
	// The x32 bit alone on a plain number too.
	want(t, "x32 bit|unshare(272)", v.run(v.audit, x32SyscallBit|272, cloneNewUser), enosys)
	// arm64 has no x32: a number that large is just unknown and allowed
	// (the kernel answers ENOSYS itself).
	a := newVM(t, "arm64")
	want(t, "arm64 nr 0x40000000", a.run(a.audit, x32SyscallBit), retAllow)
}

func TestValidateRejectsBadRules(t *testing.T) {
	good := Rule{Name: "a", Syscalls: []string{"mount"}, Errno: EPERM, Why: "x"}
	cases := map[string][]Rule{
		"duplicate syscall": {good, {Name: "b", Syscalls: []string{"mount"}, Errno: EPERM, Why: "x"}},
		"duplicate name":    {good, {Name: "a", Syscalls: []string{"umount2"}, Errno: EPERM, Why: "x"}},
		"no why":            {{Name: "a", Syscalls: []string{"mount"}, Errno: EPERM}},
		"no errno":          {{Name: "a", Syscalls: []string{"mount"}, Why: "x"}},
		"bad arg":           {{Name: "a", Syscalls: []string{"ioctl"}, Errno: EPERM, Why: "x", Cond: &Cond{Arg: 6, Op: In, Values: []uint32{1}, Text: "t"}}},
		"empty mask":        {{Name: "a", Syscalls: []string{"clone"}, Errno: EPERM, Why: "x", Cond: &Cond{Op: AnyBits, Text: "t"}}},
		"no values":         {{Name: "a", Syscalls: []string{"ioctl"}, Errno: EPERM, Why: "x", Cond: &Cond{Arg: 1, Op: In, Text: "t"}}},
	}
	for name, rules := range cases {
		if _, err := assemble("amd64", rules, false); err == nil {
			t.Errorf("%s: assemble accepted invalid rules", name)
		} else if !strings.Contains(err.Error(), "Rules[") {
			t.Errorf("%s: error %q does not name the rule", name, err)
		}
	}
	if _, err := assemble("amd64", []Rule{{Name: "typo", Syscalls: []string{"mnt"}, Errno: EPERM, Why: "x"}}, false); err == nil ||
		!strings.Contains(err.Error(), `"mnt" unknown`) {
		t.Errorf("unknown syscall name: got %v, want an error naming it", err)
	}
	if _, err := Assemble("riscv64"); err == nil {
		t.Error("Assemble(riscv64) succeeded; the filter is only written for amd64 and arm64")
	}
}

func TestDescribeNamesEveryRule(t *testing.T) {
	lines := Describe()
	if len(lines) != len(Rules)+1 {
		t.Fatalf("Describe: %d lines for %d rules", len(lines), len(Rules))
	}
	for i, r := range Rules {
		l := lines[i+1]
		if !strings.Contains(l, r.Name+":") || !strings.Contains(l, r.Errno.String()) {
			t.Errorf("Describe line %q does not name rule %s and its errno", l, r.Name)
		}
		for _, s := range r.Syscalls {
			if !strings.Contains(l, s) {
				t.Errorf("Describe line for %s lacks %s", r.Name, s)
			}
		}
	}
}

const (
	docBegin = "<!-- BEGIN seccomp rules: generated from sandbox/seccomp.Rules; go test ./sandbox/seccomp -run TestDoc -update -->\n"
	docEnd   = "<!-- END seccomp rules -->\n"
)

// TestDocMatchesRules keeps docs/seccomp.md's table equal to Rules, and
// checks every syscall name is mentioned in the document.
func TestDocMatchesRules(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "seccomp.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	doc := string(data)
	i, j := strings.Index(doc, docBegin), strings.Index(doc, docEnd)
	if i < 0 || j < i {
		t.Fatalf("%s: generated section markers missing", path)
	}
	got := doc[i+len(docBegin) : j]
	table := MarkdownTable()
	if got != table {
		if *update {
			doc = doc[:i+len(docBegin)] + table + doc[j:]
			if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("%s: rules table is stale; run go test ./sandbox/seccomp -run TestDoc -update", path)
	}
	for _, r := range Rules {
		for _, s := range r.Syscalls {
			if !strings.Contains(doc, "`"+s+"`") {
				t.Errorf("%s does not mention `%s` (rule %s)", path, s, r.Name)
			}
		}
	}
}

// TestSUIDSGIDInVM: every call that can give a file a mode is refused with
// EPERM when the mode has S_ISUID or S_ISGID — in the low word, whatever
// the high word — and allowed without them (0755, 01777 sticky, 0644);
// open/openat only when they create (O_CREAT, O_TMPFILE); openat2 gets
// ENOSYS. Both architectures (aarch64 has only the *at calls).
func TestSUIDSGIDInVM(t *testing.T) {
	const oWr, oCreat, oTmpfile, oDir = 0x1, 0x40, 0x400000, 0x10000
	perm := retErrno | uint32(EPERM)
	setid := []uint64{0o4755, 0o2755, 0o6755, 0o4000, 0o2000, 0o104755, 0xffffffff00004755}
	plain := []uint64{0, 0o755, 0o644, 0o1777, 0o777, 0o100644, 0o4755 << 32}
	for _, ga := range goarches {
		v := newVM(t, ga)
		// name → (mode argument, flags argument or -1)
		calls := map[string][2]int{
			"fchmod": {1, -1}, "fchmodat": {2, -1}, "fchmodat2": {2, -1}, "mkdirat": {2, -1}, "mknodat": {2, -1},
			"openat": {3, 2},
		}
		if ga == "amd64" {
			for n, a := range map[string][2]int{"chmod": {1, -1}, "creat": {1, -1}, "mkdir": {1, -1}, "mknod": {1, -1}, "open": {2, 1}} {
				calls[n] = a
			}
		} else {
			for _, n := range []string{"chmod", "creat", "mkdir", "mknod", "open"} {
				if _, ok := SyscallNumber(ga, n); ok {
					t.Errorf("%s has %s: the legacy list is wrong", ga, n)
				}
			}
		}
		for name, a := range calls {
			for _, m := range setid {
				args := make([]uint64, 6)
				args[0], args[a[0]] = 0xffffff9c, m
				if a[1] < 0 {
					want(t, fmt.Sprintf("%s %s mode %#o", ga, name, m), v.call(name, args...), perm)
					continue
				}
				for _, f := range []uint64{oWr | oCreat, oCreat, oWr | oTmpfile | oDir, 0x80000 | 0x80 | oWr | oCreat} {
					args[a[1]] = f
					want(t, fmt.Sprintf("%s %s flags %#x mode %#o", ga, name, f, m), v.call(name, args...), perm)
				}
				// Without O_CREAT/O_TMPFILE the kernel ignores the mode.
				for _, f := range []uint64{0, oWr, 0x2 | 0x200, oDir, oCreat << 32} {
					args[a[1]] = f
					want(t, fmt.Sprintf("%s %s flags %#x mode %#o (not creating)", ga, name, f, m), v.call(name, args...), retAllow)
				}
			}
			for _, m := range plain {
				args := make([]uint64, 6)
				args[0], args[a[0]] = 0xffffff9c, m
				if a[1] >= 0 {
					args[a[1]] = oWr | oCreat
				}
				want(t, fmt.Sprintf("%s %s mode %#o", ga, name, m), v.call(name, args...), retAllow)
			}
		}
		want(t, ga+" openat2", v.call("openat2", 0xffffff9c, 0, 0, 24), retErrno|uint32(ENOSYS))
	}
}
