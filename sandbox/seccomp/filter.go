package seccomp

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"sync"

	"golang.org/x/net/bpf"
)

// Why the filter is assembled here rather than with go-seccomp-bpf's Policy:
// that assembler (v1.6.0) sends a call from a foreign architecture to the
// policy's default action — for a deny-list, "allow", so i386 syscalls via
// int 0x80 on x86_64 would bypass every rule; it has no 32-bit compare, which
// the ioctl rule needs (CVE-2019-10063); and after a failed argument test it
// goes on comparing the loaded argument as if it were the syscall number.
// go-seccomp-bpf's syscall tables are still the source of the numbers.

// seccomp return values (include/uapi/linux/seccomp.h).
const (
	retKillProcess = 0x80000000
	retErrno       = 0x00050000
	retAllow       = 0x7fff0000
)

// seccomp_data layout (include/uapi/linux/seccomp.h): int nr; __u32 arch;
// __u64 instruction_pointer; __u64 args[6].
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// x32SyscallBit marks x32 system calls on x86_64 (__X32_SYSCALL_BIT).
const x32SyscallBit = 0x40000000

// ErrUnsupportedArch is returned for an architecture the filter is not
// written for.
var ErrUnsupportedArch = errors.New("seccomp: unsupported architecture (want amd64 or arm64)")

// archTable is a syscall table: the AUDIT_ARCH_* value and the numbers of
// the system calls by kernel name.
type archTable struct {
	ID           uint32
	SyscallNames map[string]int
}

// tables holds the syscall table of each GOARCH the filter can be built
// for. A release binary knows only its own architecture (nativeTable);
// the tests register the others from go-seccomp-bpf to assemble and run
// foreign filters in the BPF interpreter.
var tables = map[string]*archTable{}

// moreNames, set by the tests, numbers system calls the rules do not name.
var moreNames func(goarch, name string) (int, bool)

// archInfo returns the syscall table for a GOARCH we support. Both are
// little-endian, which [Assemble] relies on to find an argument's low word.
func archInfo(goarch string) (*archTable, error) {
	if goarch != "amd64" && goarch != "arm64" {
		return nil, fmt.Errorf("%w: %q", ErrUnsupportedArch, goarch)
	}
	if goarch == runtime.GOARCH && nativeTable != nil {
		return nativeTable(), nil
	}
	if t := tables[goarch]; t != nil {
		return t, nil
	}
	return nil, fmt.Errorf("%w: %q (no syscall table in this build)", ErrUnsupportedArch, goarch)
}

// AuditArch returns the AUDIT_ARCH_* value the filter accepts for goarch.
func AuditArch(goarch string) (uint32, error) {
	a, err := archInfo(goarch)
	if err != nil {
		return 0, err
	}
	return uint32(a.ID), nil
}

// SyscallNumber returns the number of a system call on goarch.
func SyscallNumber(goarch, name string) (int, bool) {
	a, err := archInfo(goarch)
	if err != nil {
		return 0, false
	}
	n, ok := a.SyscallNames[name]
	if !ok && moreNames != nil {
		return moreNames(goarch, name)
	}
	return n, ok
}

// program is a tiny cBPF assembler with forward-only symbolic jumps.
type program struct {
	ins    []bpf.Instruction
	jumps  []pendingJump
	labels map[string]int
}

type pendingJump struct {
	at          int
	true, false string // "" means the next instruction
	always      bool   // an unconditional jump (32-bit offset) to true
}

func (p *program) emit(i bpf.Instruction) { p.ins = append(p.ins, i) }

func (p *program) jump(cond bpf.JumpTest, val uint32, t, f string) {
	p.jumps = append(p.jumps, pendingJump{at: len(p.ins), true: t, false: f})
	p.emit(bpf.JumpIf{Cond: cond, Val: val})
}

// gotoLabel jumps to a later label whatever the distance (BPF_JA).
func (p *program) gotoLabel(t string) {
	p.jumps = append(p.jumps, pendingJump{at: len(p.ins), true: t, always: true})
	p.emit(bpf.Jump{})
}

func (p *program) label(name string) error {
	if _, dup := p.labels[name]; dup {
		return fmt.Errorf("seccomp: duplicate label %q", name)
	}
	p.labels[name] = len(p.ins)
	return nil
}

func (p *program) resolve() ([]bpf.Instruction, error) {
	skip := func(from int, name string) (uint8, error) {
		if name == "" {
			return 0, nil
		}
		to, ok := p.labels[name]
		if !ok {
			return 0, fmt.Errorf("seccomp: undefined label %q", name)
		}
		d := to - from - 1
		if d < 0 || d > 255 {
			return 0, fmt.Errorf("seccomp: jump from %d to %q (%d) out of range", from, name, to)
		}
		return uint8(d), nil
	}
	for _, j := range p.jumps {
		if j.always {
			to, ok := p.labels[j.true]
			if !ok || to <= j.at {
				return nil, fmt.Errorf("seccomp: unconditional jump to %q: undefined or backwards", j.true)
			}
			p.ins[j.at] = bpf.Jump{Skip: uint32(to - j.at - 1)}
			continue
		}
		ji := p.ins[j.at].(bpf.JumpIf)
		var err error
		if ji.SkipTrue, err = skip(j.at, j.true); err != nil {
			return nil, err
		}
		if ji.SkipFalse, err = skip(j.at, j.false); err != nil {
			return nil, err
		}
		p.ins[j.at] = ji
	}
	return p.ins, nil
}

func errnoLabel(e Errno) string { return fmt.Sprintf("ret-errno-%d", e) }

// Assemble compiles [Rules] into a seccomp cBPF program for goarch ("amd64"
// or "arm64"). The program:
//
//  1. kills the process if seccomp_data.arch is not the native AUDIT_ARCH;
//  2. on amd64, returns ENOSYS for any x32 call (nr >= 0x40000000);
//  3. compares nr against every rule's system calls; an unconditional match
//     returns the rule's errno, a conditional one loads the low 32 bits of
//     the argument and returns the errno or allows;
//  4. allows everything else.
//
// families are address families socket(2) may name besides the default
// ones (RulesAllowing).
func Assemble(goarch string, families ...uint32) ([]bpf.Instruction, error) {
	return assembleRules(goarch, false, families)
}

// assembled memoizes the filter built from the package's Rules, which
// nothing changes at run time: the sandbox's init needs it twice on its
// start-up path (the listener's Decider and the installed filter), and
// each assembly costs a few hundred microseconds there (issue 9). Callers
// get their own copy.
var assembled struct {
	sync.Mutex
	m map[assembledKey][]bpf.Instruction
}

type assembledKey struct {
	goarch   string
	writes   bool
	families string
}

func assembleRules(goarch string, writes bool, families []uint32) ([]bpf.Instruction, error) {
	k := assembledKey{goarch, writes, fmt.Sprint(families)}
	assembled.Lock()
	defer assembled.Unlock()
	if insts, ok := assembled.m[k]; ok {
		return slices.Clone(insts), nil
	}
	insts, err := assemble(goarch, RulesAllowing(families), writes)
	if err != nil {
		return nil, err
	}
	if assembled.m == nil {
		assembled.m = map[assembledKey][]bpf.Instruction{}
	}
	assembled.m[k] = insts
	return slices.Clone(insts), nil
}

// assemble compiles rules; with writes, the calls the deny-list allows go
// on to the write section (writes.go) instead of being allowed at once.
func assemble(goarch string, rules []Rule, writes bool) ([]bpf.Instruction, error) {
	info, err := archInfo(goarch)
	if err != nil {
		return nil, err
	}
	if err := validate(rules); err != nil {
		return nil, err
	}

	type target struct {
		nr    uint32
		label string
		rule  int
		name  string
	}
	var targets []target
	errnos := map[Errno]bool{}
	for ri, r := range rules {
		for _, name := range r.Syscalls {
			nr, ok := info.SyscallNames[name]
			if !ok && legacyCalls[name] && goarch != "amd64" {
				continue // an x86_64-only call (rules.go)
			}
			if !ok {
				return nil, fmt.Errorf("seccomp: rule %q: system call %q unknown on %s", r.Name, name, goarch)
			}
			lbl := errnoLabel(r.Errno)
			if r.Cond != nil {
				lbl = "cond-" + name
			} else {
				errnos[r.Errno] = true
			}
			targets = append(targets, target{nr: uint32(nr), label: lbl, rule: ri, name: name})
		}
	}

	p := &program{labels: map[string]int{}}
	// 1. Architecture. A foreign ABI uses other syscall numbers; the rules
	// below would not apply to it.
	p.emit(bpf.LoadAbsolute{Off: offArch, Size: 4})
	p.jump(bpf.JumpEqual, uint32(info.ID), "native", "")
	p.emit(bpf.RetConstant{Val: retKillProcess})
	if err := p.label("native"); err != nil {
		return nil, err
	}
	p.emit(bpf.LoadAbsolute{Off: offNr, Size: 4})
	// 2. x32 uses the x86_64 AUDIT_ARCH with bit 30 set in nr.
	if goarch == "amd64" {
		p.jump(bpf.JumpGreaterOrEqual, x32SyscallBit, errnoLabel(ENOSYS), "")
		errnos[ENOSYS] = true
	}
	// 3. Syscall numbers.
	for _, t := range targets {
		p.jump(bpf.JumpEqual, t.nr, t.label, "")
	}
	// 4. Default.
	if writes {
		p.gotoLabel("writes")
	} else {
		p.emit(bpf.RetConstant{Val: retAllow})
	}

	// Shared errno returns.
	var list []int
	for e := range errnos {
		list = append(list, int(e))
	}
	sort.Ints(list)
	for _, e := range list {
		if err := p.label(errnoLabel(Errno(e))); err != nil {
			return nil, err
		}
		p.emit(bpf.RetConstant{Val: retErrno | uint32(e)})
	}

	// Argument checks. Each block knows its syscall already, so it ends in
	// a return (or, with writes, the jump to the write section: a call the
	// condition allows may still be a write call) and never falls through
	// to another comparison of nr.
	for _, t := range targets {
		r := rules[t.rule]
		if r.Cond == nil {
			continue
		}
		c := r.Cond
		if o := r.CondOf[t.name]; o != nil {
			c = o
		}
		deny, allow := t.label+"-deny", t.label+"-allow"
		if err := p.label(t.label); err != nil {
			return nil, err
		}
		for i := 0; c != nil; i, c = i+1, c.And {
			next := deny
			if c.And != nil {
				next = fmt.Sprintf("%s-and%d", t.label, i+1)
			}
			// Low word of args[i]; both supported arches are little-endian.
			p.emit(bpf.LoadAbsolute{Off: uint32(offArgs + 8*c.Arg), Size: 4})
			switch c.Op {
			case AnyBits:
				p.jump(bpf.JumpBitsSet, c.Mask, next, allow)
			case In:
				for _, v := range c.Values {
					p.jump(bpf.JumpEqual, v, next, "")
				}
				p.gotoLabel(allow)
			case NotIn:
				for _, v := range c.Values {
					p.jump(bpf.JumpEqual, v, allow, "")
				}
				p.gotoLabel(next)
			}
			if c.And != nil {
				if err := p.label(next); err != nil {
					return nil, err
				}
			}
		}
		if err := p.label(deny); err != nil {
			return nil, err
		}
		p.emit(bpf.RetConstant{Val: retErrno | uint32(r.Errno)})
		if err := p.label(allow); err != nil {
			return nil, err
		}
		if writes {
			p.gotoLabel("writes")
		} else {
			p.emit(bpf.RetConstant{Val: retAllow})
		}
	}
	if writes {
		if err := p.label("writes"); err != nil {
			return nil, err
		}
		if err := emitWrites(p, goarch); err != nil {
			return nil, err
		}
	}
	return p.resolve()
}

// validate checks the rule data itself: names unique, conditions sane.
func validate(rules []Rule) error {
	seenRule := map[string]bool{}
	seenCall := map[string]string{}
	for i, r := range rules {
		where := fmt.Sprintf("seccomp: Rules[%d] %q", i, r.Name)
		if r.Name == "" || seenRule[r.Name] {
			return fmt.Errorf("%s: empty or duplicate rule name", where)
		}
		seenRule[r.Name] = true
		if len(r.Syscalls) == 0 {
			return fmt.Errorf("%s: no system calls", where)
		}
		if r.Errno == 0 || r.Errno > 4095 {
			return fmt.Errorf("%s: errno %d out of range", where, r.Errno)
		}
		if r.Why == "" {
			return fmt.Errorf("%s: no Why", where)
		}
		for _, s := range r.Syscalls {
			if prev, dup := seenCall[s]; dup {
				return fmt.Errorf("%s: system call %q already in rule %q", where, s, prev)
			}
			seenCall[s] = r.Name
		}
		if r.Cond == nil && len(r.CondOf) > 0 {
			return fmt.Errorf("%s: CondOf without Cond", where)
		}
		for s, c := range r.CondOf {
			if !contains(r.Syscalls, s) {
				return fmt.Errorf("%s: CondOf names %q, not one of its system calls", where, s)
			}
			if err := validCond(where+" CondOf["+s+"]", c); err != nil {
				return err
			}
		}
		if r.Cond != nil {
			if err := validCond(where, r.Cond); err != nil {
				return err
			}
		}
	}
	return nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// validCond checks one condition and the ones it requires (And).
func validCond(where string, c *Cond) error {
	for ; c != nil; c = c.And {
		if c.Arg < 0 || c.Arg > 5 {
			return fmt.Errorf("%s: argument index %d not in 0..5", where, c.Arg)
		}
		switch c.Op {
		case AnyBits:
			if c.Mask == 0 {
				return fmt.Errorf("%s: AnyBits with empty mask", where)
			}
		case In, NotIn:
			if len(c.Values) == 0 {
				return fmt.Errorf("%s: %v with no values", where, c.Op)
			}
		default:
			return fmt.Errorf("%s: unknown operator %v", where, c.Op)
		}
		if c.Text == "" {
			return fmt.Errorf("%s: condition without Text", where)
		}
	}
	return nil
}
