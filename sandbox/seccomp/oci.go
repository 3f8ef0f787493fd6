package seccomp

import (
	"fmt"
	"slices"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// lowWord selects the low 32 bits of an argument in an OCI masked compare.
// The kernel truncates the arguments the rules test to 32 bits (see
// [Cond]); an OCI SCMP_CMP_EQ compares all 64, so 0x100005412 would pass a
// TIOCSTI rule written with EQ (CVE-2019-10063). Every condition below is
// therefore a SCMP_CMP_MASKED_EQ on the low word.
const lowWord = 0xffffffff

// ociArch maps a GOARCH to the OCI/libseccomp architecture name.
var ociArch = map[string]specs.Arch{"amd64": specs.ArchX86_64, "arm64": specs.ArchAARCH64}

// OCI renders [Rules] as an OCI runtime-spec seccomp section, for runtimes
// (runc, the containerd shim) that build the BPF themselves with
// libseccomp. One source of rules: the same data Assemble compiles.
//
// Translation, rule by rule (every rule denies; the default allows):
//   - unconditional: the names with SCMP_ACT_ERRNO and the rule's errno;
//   - per call where CondOf differs; a condition with And: one entry per
//     combination of the alternatives of each (different arguments in
//     one entry are AND-ed);
//   - AnyBits: one entry per bit of the mask, each a masked compare
//     (arg & bit) == bit — entries with one action are OR-ed;
//   - In: one entry per value, (arg & 0xffffffff) == value;
//   - NotIn: the allowed values must be every combination of a few bits
//     (personality: PER_LINUX32 and UNAME26) plus, optionally, the query
//     value 0xffffffff; one entry per other low bit, as for AnyBits. The
//     query is then refused too (EPERM): stricter than the BPF filter,
//     never looser — see [OCIStricter]. Or, when every allowed value is
//     below 64 (address families): one entry per other value below 64 and
//     one per bit from 64 up — exact.
//
// A foreign architecture is killed by libseccomp's bad-arch action, as by
// the BPF filter.
//
// families are address families socket(2) may name besides the default
// ones (RulesAllowing).
func OCI(goarch string, families ...uint32) (*specs.LinuxSeccomp, error) {
	return ociRules(goarch, RulesAllowing(families))
}

func ociRules(goarch string, rules []Rule) (*specs.LinuxSeccomp, error) {
	arch, ok := ociArch[goarch]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrUnsupportedArch, goarch)
	}
	if err := validate(rules); err != nil {
		return nil, err
	}
	out := &specs.LinuxSeccomp{
		DefaultAction: specs.ActAllow,
		Architectures: []specs.Arch{arch},
	}
	for _, r := range rules {
		errno := uint(r.Errno)
		// Calls grouped by the condition that applies to them (CondOf),
		// in rule order; legacy calls the architecture lacks are left out.
		var order []*Cond
		names := map[*Cond][]string{}
		for _, n := range r.Syscalls {
			if legacyCalls[n] && goarch != "amd64" {
				continue
			}
			c := r.Cond
			if o := r.CondOf[n]; o != nil {
				c = o
			}
			if _, ok := names[c]; !ok {
				order = append(order, c)
			}
			names[c] = append(names[c], n)
		}
		for _, c := range order {
			base := specs.LinuxSyscall{Names: names[c], Action: specs.ActErrno, ErrnoRet: &errno}
			if c == nil {
				out.Syscalls = append(out.Syscalls, base)
				continue
			}
			// Conditions on different arguments in one entry are AND-ed
			// (And); alternatives on one argument are entries of their own.
			combos := [][]specs.LinuxSeccompArg{nil}
			for ; c != nil; c = c.And {
				alts, err := ociCond(c)
				if err != nil {
					return nil, fmt.Errorf("seccomp: rule %q: %w", r.Name, err)
				}
				var next [][]specs.LinuxSeccompArg
				for _, prev := range combos {
					for _, a := range alts {
						next = append(next, append(append([]specs.LinuxSeccompArg{}, prev...), a))
					}
				}
				combos = next
			}
			for _, args := range combos {
				s := base
				s.Names = append([]string{}, base.Names...)
				s.Args = args
				out.Syscalls = append(out.Syscalls, s)
			}
		}
	}
	return out, nil
}

// ociCond returns the alternatives (OR-ed) that make one condition match.
func ociCond(c *Cond) ([]specs.LinuxSeccompArg, error) {
	idx := uint(c.Arg)
	var out []specs.LinuxSeccompArg
	switch c.Op {
	case AnyBits:
		for bit := uint32(1); bit != 0; bit <<= 1 {
			if c.Mask&bit != 0 {
				out = append(out, specs.LinuxSeccompArg{Index: idx, Value: uint64(bit), ValueTwo: uint64(bit), Op: specs.OpMaskedEqual})
			}
		}
	case In:
		for _, v := range c.Values {
			out = append(out, specs.LinuxSeccompArg{Index: idx, Value: lowWord, ValueTwo: uint64(v), Op: specs.OpMaskedEqual})
		}
	case NotIn:
		// libseccomp OR-s conditions on one argument (runc adds each
		// as its own rule), so "not in {…}" cannot be a list of !=.
		// It is expressible when the allowed values are exactly the
		// combinations of a few bits: deny any other bit set.
		allowed, err := bitClosure(c.Values)
		if err != nil {
			// Small allowed values (address families): every other value
			// below 64 by itself, and any bit from 64 up, as for AnyBits —
			// exactly "not in", no stricter.
			if small := smallNotIn(idx, c.Values); small != nil {
				return small, nil
			}
			return nil, err
		}
		for bit := uint32(1); bit != 0; bit <<= 1 {
			if allowed&bit == 0 {
				out = append(out, specs.LinuxSeccompArg{Index: idx, Value: uint64(bit), ValueTwo: uint64(bit), Op: specs.OpMaskedEqual})
			}
		}
	default:
		return nil, fmt.Errorf("operator %v has no OCI form", c.Op)
	}
	return out, nil
}

// smallNotIn is the OCI form of "uint32(arg) not in values" when every
// value is below 64: one masked compare per refused value under 64, one
// per bit from 64 up. nil when a value is 64 or more.
func smallNotIn(idx uint, values []uint32) []specs.LinuxSeccompArg {
	for _, v := range values {
		if v >= 64 {
			return nil
		}
	}
	var out []specs.LinuxSeccompArg
	for v := uint32(0); v < 64; v++ {
		if !slices.Contains(values, v) {
			out = append(out, specs.LinuxSeccompArg{Index: idx, Value: lowWord, ValueTwo: uint64(v), Op: specs.OpMaskedEqual})
		}
	}
	for bit := uint32(64); bit != 0; bit <<= 1 {
		out = append(out, specs.LinuxSeccompArg{Index: idx, Value: uint64(bit), ValueTwo: uint64(bit), Op: specs.OpMaskedEqual})
	}
	return out
}

// queryAll is personality(0xffffffff), which only reads the persona.
const queryAll = 0xffffffff

// OCIStricter lists what the OCI form denies that the BPF filter allows:
// libseccomp cannot say "bit set and not all bits set" in one entry.
var OCIStricter = []string{"personality(0xffffffff): the persona query is refused with EPERM"}

// bitClosure returns the mask A whose every subset is an allowed value,
// when values (less queryAll) are exactly those subsets.
func bitClosure(values []uint32) (uint32, error) {
	set := map[uint32]bool{}
	var a uint32
	for _, v := range values {
		if v == queryAll {
			continue
		}
		set[v] = true
		a |= v
	}
	n := 0
	for b := a; b != 0; b &= b - 1 {
		n++
	}
	if n > 8 {
		return 0, fmt.Errorf("not-in values span %d bits: no OCI form", n)
	}
	count := 0
	for sub := a; ; sub = (sub - 1) & a {
		if !set[sub] {
			return 0, fmt.Errorf("not-in values are not every combination of %#x (missing %#x): no OCI form", a, sub)
		}
		count++
		if sub == 0 {
			break
		}
	}
	if count != len(set) {
		return 0, fmt.Errorf("not-in values are not every combination of %#x: no OCI form", a)
	}
	return a, nil
}
