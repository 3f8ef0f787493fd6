package seccomp

import (
	"fmt"
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// ociEval applies an OCI seccomp section as libseccomp does for runc: an
// entry matches when the name matches and every one of its conditions
// holds (runc gives conditions on distinct arguments to one rule); the
// first denying match wins, else the default action.
func ociEval(s *specs.LinuxSeccomp, name string, args [6]uint64) (specs.LinuxSeccompAction, uint) {
	for _, e := range s.Syscalls {
		if !slices.Contains(e.Names, name) {
			continue
		}
		ok := true
		for _, a := range e.Args {
			v := args[a.Index]
			switch a.Op {
			case specs.OpMaskedEqual:
				ok = ok && v&a.Value == a.ValueTwo
			case specs.OpEqualTo:
				ok = ok && v == a.Value
			case specs.OpNotEqual:
				ok = ok && v != a.Value
			default:
				panic("operator not modelled: " + string(a.Op))
			}
		}
		if ok {
			return e.Action, *e.ErrnoRet
		}
	}
	return s.DefaultAction, 0
}

// samples are the argument values worth trying for a rule: zero, every
// value and mask bit it names, the same with a high bit the kernel throws
// away, all ones.
func samples(c *Cond) []uint64 {
	out := []uint64{0, 1, 0xffffffff, 1 << 32, 0xffffffffffffffff}
	if c == nil {
		return out
	}
	for _, v := range c.Values {
		out = append(out, uint64(v), uint64(v)|1<<32, uint64(v)|1<<63, uint64(v)^1)
	}
	for bit := uint32(1); bit != 0; bit <<= 1 {
		out = append(out, uint64(bit), uint64(bit)|1<<40)
		if c.Mask&bit != 0 {
			out = append(out, uint64(c.Mask), uint64(c.Mask&^bit))
		}
	}
	return out
}

// TestOCICoversEveryRule: for every rule, every system call it names and a
// spread of argument values, the OCI export denies whatever the BPF filter
// denies, with the same errno, and allows only what it allows — except
// the documented OCIStricter cases.
func TestOCICoversEveryRule(t *testing.T) {
	for _, goarch := range goarches {
		v := newVM(t, goarch)
		s, err := OCI(goarch)
		if err != nil {
			t.Fatalf("OCI(%s): %v", goarch, err)
		}
		if s.DefaultAction != specs.ActAllow || len(s.Architectures) != 1 {
			t.Fatalf("OCI(%s): default %s, arches %v", goarch, s.DefaultAction, s.Architectures)
		}
		stricter := 0
		for _, r := range Rules {
			for _, name := range r.Syscalls {
				if _, ok := SyscallNumber(goarch, name); !ok && legacyCalls[name] {
					continue
				}
				args := [6]uint64{}
				c := r.Cond
				if o := r.CondOf[name]; o != nil {
					c = o
				}
				idx, idx2 := 0, -1
				if c != nil {
					idx = c.Arg
				}
				// A second condition (And): its samples with each of the first's.
				second := []uint64{0}
				if c != nil && c.And != nil {
					idx2, second = c.And.Arg, samples(c.And)
				}
				for _, x := range samples(c) {
					for _, y := range second {
						args[idx] = x
						if idx2 >= 0 {
							args[idx2] = y
						}
						bpfRet := v.call(name, args[:]...)
						act, errno := ociEval(s, name, args)
						what := fmt.Sprintf("%s %s(arg%d=%#x arg%d=%#x)", goarch, name, idx, x, idx2, y)
						switch {
						case bpfRet == retAllow && act == specs.ActAllow:
						case bpfRet&0xffff0000 == retErrno && act == specs.ActErrno:
							if uint(bpfRet&0xffff) != errno {
								t.Errorf("%s: BPF errno %d, OCI errno %d", what, bpfRet&0xffff, errno)
							}
						case bpfRet == retAllow && act == specs.ActErrno && name == "personality" && uint32(x) == queryAll:
							stricter++ // OCIStricter[0]
						default:
							t.Errorf("%s: BPF says %s, OCI says %s", what, retName(bpfRet), act)
						}
					}
				}
			}
		}
		if stricter == 0 {
			t.Errorf("%s: OCIStricter names a case the test never met: update the list", goarch)
		}
		// Every rule's every call is named in the export.
		for _, r := range Rules {
			for _, name := range r.Syscalls {
				if _, ok := SyscallNumber(goarch, name); !ok && legacyCalls[name] {
					continue
				}
				if !slices.ContainsFunc(s.Syscalls, func(e specs.LinuxSyscall) bool { return slices.Contains(e.Names, name) }) {
					t.Errorf("%s: %s (rule %s) missing from the OCI export", goarch, name, r.Name)
				}
			}
		}
	}
}

func TestOCIRefusesWhatItCannotSay(t *testing.T) {
	bad := []Rule{{Name: "x", Syscalls: []string{"personality"}, Errno: EPERM, Why: "w",
		Cond: &Cond{Arg: 0, Op: NotIn, Values: []uint32{0, 3, 100}, Text: "t"}}}
	if _, err := ociRules("amd64", bad); err == nil {
		t.Fatal("NotIn {0,3,100} (3 needs 1 and 2; 100 is no small value) translated; want an error")
	}
	if _, err := OCI("riscv64"); err == nil {
		t.Fatal("OCI(riscv64): want ErrUnsupportedArch")
	}
}

// TestOCISocketFamiliesExact: the OCI form of socket-families denies
// exactly what the BPF filter denies — every family but the allowed ones,
// in any high word — with and without a profile's additions.
func TestOCISocketFamiliesExact(t *testing.T) {
	for _, extra := range [][]uint32{nil, {40, 17}} {
		s, err := OCI("amd64", extra...)
		if err != nil {
			t.Fatal(err)
		}
		allowed := append(slices.Clone(DefaultSocketFamilies), extra...)
		for _, call := range []string{"socket", "socketpair"} {
			denied := func(arg uint64) bool {
				for _, e := range s.Syscalls {
					if !slices.Contains(e.Names, call) {
						continue
					}
					match := true
					for _, a := range e.Args {
						if a.Index != 0 || a.Op != specs.OpMaskedEqual || arg&a.Value != a.ValueTwo {
							match = false
						}
					}
					if match {
						return true
					}
				}
				return false
			}
			var values []uint64
			for v := uint64(0); v < 300; v++ {
				values = append(values, v, v|1<<32, v|0xffffffff00000000)
			}
			values = append(values, 0x7fffffff, 0x80000000, 0xffffffff, 1<<20|2)
			for _, v := range values {
				want := !slices.Contains(allowed, uint32(v))
				if got := denied(v); got != want {
					t.Errorf("extra %v: OCI %s(%#x) denied=%v, want %v", extra, call, v, got, want)
				}
			}
		}
	}
}
