package k8s

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"github.com/fedmem/fedmem/test/testutil"
	"runtime"
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/net/bpf"

	"github.com/fedmem/fedmem/sandbox/seccomp"
)

// decodeSeccomp decodes the profile JSON strictly.
func decodeSeccomp(t *testing.T, b []byte) Seccomp {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s Seccomp
	if err := dec.Decode(&s); err != nil {
		t.Fatalf("seccomp JSON does not decode strictly: %v\n%s", err, b)
	}
	return s
}

// TestSeccompCoversEveryRule: every system call of every rule of
// sandbox/seccomp has an entry named after the rule, denying with the
// rule's errno, and nothing else is in the profile.
func TestSeccompCoversEveryRule(t *testing.T) {
	r, err := SeccompProfile()
	if err != nil {
		t.Fatal(err)
	}
	b, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	s := decodeSeccomp(t, b)
	if s.DefaultAction != specs.ActAllow {
		t.Errorf("defaultAction %q, want %q (a deny-list)", s.DefaultAction, specs.ActAllow)
	}
	if fmt.Sprint(s.Architectures) != "[SCMP_ARCH_X86_64 SCMP_ARCH_AARCH64]" {
		t.Errorf("architectures %v: only the native ABIs may be listed (a foreign ABI must hit the bad-arch kill)", s.Architectures)
	}
	for _, rule := range seccomp.Rules {
		for _, name := range rule.Syscalls {
			found := false
			for _, e := range s.Syscalls {
				if contains(e.Names, name) && subset(e.Names, rule.Syscalls) {
					found = true
				}
			}
			if !found {
				t.Errorf("rule %s: no entry denies %s", rule.Name, name)
			}
		}
	}
	for i, e := range s.Syscalls {
		rule, ok := ruleOf(e.Names)
		if !ok {
			t.Errorf("entry %d (%v) is not the call list of one rule of sandbox/seccomp", i, e.Names)
			continue
		}
		if e.Action != specs.ActErrno || e.ErrnoRet == nil || *e.ErrnoRet != uint(rule.Errno) {
			t.Errorf("entry %d (%s): action %s errno %v, want %s %d", i, rule.Name, e.Action, e.ErrnoRet, specs.ActErrno, rule.Errno)
		}
		if (rule.Cond == nil && rule.CondOf == nil) != (len(e.Args) == 0) {
			t.Errorf("entry %d (%s): %d argument tests, rule condition %v", i, rule.Name, len(e.Args), rule.Cond)
		}
		for _, a := range e.Args {
			if a.Op != specs.OpMaskedEqual || a.Value>>32 != 0 {
				t.Errorf("entry %d (%s): test %+v must be MASKED_EQ on the low 32 bits only (CVE-2019-10063)", i, rule.Name, a)
			}
		}
	}
}

// matches evaluates the profile as libseccomp does for a native call:
// entries naming the call are OR'ed, the tests of one entry AND'ed, each
// test over all 64 bits of the argument. It returns the errno of the
// first matching entry, or 0 (allowed).
func matches(s *Seccomp, name string, args [6]uint64) uint {
	for _, e := range s.Syscalls {
		if !contains(e.Names, name) {
			continue
		}
		ok := true
		for _, a := range e.Args {
			if a.Op != specs.OpMaskedEqual || args[a.Index]&a.Value != a.ValueTwo {
				ok = false
			}
		}
		if ok {
			return *e.ErrnoRet
		}
	}
	return 0
}

// TestSeccompMatchesFilter runs fedmem's own filter (assembled by
// sandbox/seccomp, in x/net/bpf's interpreter) and the rendered profile on
// the same calls: edge values of every condition, with and without high
// bits, and random arguments. The two must agree on every call, except
// where the profile is stricter and says so in Notes.
func TestSeccompMatchesFilter(t *testing.T) {
	goarch := runtime.GOARCH
	insts, err := seccomp.Assemble(goarch)
	if err != nil {
		t.Skipf("no filter for %s: %v", goarch, err)
	}
	m, err := bpf.NewVM(insts)
	if err != nil {
		t.Fatal(err)
	}
	audit, _ := seccomp.AuditArch(goarch)
	r, err := SeccompProfile()
	if err != nil {
		t.Fatal(err)
	}
	rng := testutil.Seed(t)

	run := func(name string, args [6]uint64) uint {
		nr, ok := seccomp.SyscallNumber(goarch, name)
		if !ok {
			return ^uint(0)
		}
		b := make([]byte, 64)
		// x/net/bpf loads big-endian; write each word where a
		// little-endian kernel would find it (as sandbox/seccomp's tests do).
		binary.BigEndian.PutUint32(b[0:], uint32(nr))
		binary.BigEndian.PutUint32(b[4:], audit)
		for i, a := range args {
			binary.BigEndian.PutUint32(b[16+8*i:], uint32(a))
			binary.BigEndian.PutUint32(b[16+8*i+4:], uint32(a>>32))
		}
		out, err := m.Run(b)
		if err != nil {
			t.Fatalf("bpf run %s: %v", name, err)
		}
		switch {
		case uint32(out) == 0x7fff0000:
			return 0
		case uint32(out)&0xffff0000 == 0x00050000:
			return uint(out & 0xffff)
		}
		t.Fatalf("%s%v: filter returned %#x", name, args, out)
		return 0
	}
	stricter := 0
	calls := 0
	for _, rule := range seccomp.Rules {
		var vals []uint64
		if c := rule.Cond; c != nil {
			for _, b := range bitsOf(c.Mask) {
				vals = append(vals, uint64(b), uint64(b)|1<<40, uint64(c.Mask)&^uint64(b))
			}
			for _, v := range c.Values {
				vals = append(vals, uint64(v), uint64(v)|1<<63, uint64(v)^1, uint64(v)|0x40)
			}
		}
		vals = append(vals, 0, 1<<32, 0xffffffff, ^uint64(0))
		for i := 0; i < 200; i++ {
			vals = append(vals, rng.Uint64(), uint64(rng.Uint32()))
		}
		for _, name := range rule.Syscalls {
			for _, v := range vals {
				var args [6]uint64
				if rule.Cond != nil {
					args[rule.Cond.Arg] = v
				}
				want := run(name, args)
				if want == ^uint(0) {
					continue // not on this architecture
				}
				calls++
				got := matches(&r.Profile, name, args)
				if got == want {
					continue
				}
				if want == 0 && got != 0 && uint32(v) == 0xffffffff && rule.Cond != nil && rule.Cond.Op == seccomp.NotIn {
					stricter++
					continue
				}
				t.Errorf("%s(%#x) (rule %s): profile gives errno %d, fedmem's filter %d", name, v, rule.Name, got, want)
			}
		}
	}
	t.Logf("%d calls compared, %d stricter in the profile", calls, stricter)
	if calls < 1000 {
		t.Fatalf("only %d calls compared", calls)
	}
	if stricter > 0 && len(r.Notes) == 0 {
		t.Errorf("the profile denies %d calls the filter allows but Notes says nothing", stricter)
	}
}

// ruleOf finds the rule whose call list is names.
// ruleOf is the one rule whose calls an entry names: all of them, or for
// a rule whose argument sits in different places (CondOf: chmod's mode is
// args[1], fchmodat's args[2]) the calls that share one place.
func ruleOf(names []string) (seccomp.Rule, bool) {
	var found []seccomp.Rule
	for _, r := range seccomp.Rules {
		if slices.Equal(r.Syscalls, names) || (r.CondOf != nil && subset(names, r.Syscalls)) {
			found = append(found, r)
		}
	}
	if len(found) != 1 {
		return seccomp.Rule{}, false
	}
	return found[0], true
}

// subset: every name of a is in b.
func subset(a, b []string) bool {
	for _, x := range a {
		if !contains(b, x) {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
