package seccomp

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/net/bpf"
)

// retUserNotif hands the call to the filter's listener
// (SECCOMP_RET_USER_NOTIF, Linux 5.0).
const retUserNotif = 0x7fc00000

// Why a notifying filter: a refused system call is otherwise invisible —
// the agent sees EPERM, the user sees nothing. With the denials of the
// deny-list returning SECCOMP_RET_USER_NOTIF instead, the process that
// holds the filter's listener (the sandbox's pid 1) learns each refusal
// from the kernel's own seccomp_data and answers it with the rule's errno.
// The listener never decides: Decide runs the ordinary filter over the
// same seccomp_data, so the answer is exactly what the errno filter would
// have returned, and nothing the agent controls (no memory it points to)
// is read. Compatibility answers are not denials and stay in the kernel:
// ENOSYS (clone3, x32, which glibc and Go retry with clone) and EOPNOTSUPP
// (fallocate, which glibc emulates) never reach the listener.

// notifies says whether a refusal with this errno goes to the listener.
func notifies(e Errno) bool { return e != ENOSYS && e != EOPNOTSUPP }

// AssembleNotify is Assemble with every notifying refusal turned into
// SECCOMP_RET_USER_NOTIF and, with writes, the write calls the deny-list
// allows (WriteCalls, write-intent opens only) handed to the listener too,
// to be answered CONTINUE (writes.go). One filter for both: the kernel
// gives a filter chain one listener only (EBUSY for a second). Without
// writes only refusals reach the listener: every call the deny-list allows
// is allowed in the kernel, as by Assemble (--fs-denials off: a write call
// then costs nothing).
func AssembleNotify(goarch string, writes bool, families ...uint32) ([]bpf.Instruction, error) {
	insts, err := assembleRules(goarch, writes, families)
	if err != nil {
		return nil, err
	}
	out := make([]bpf.Instruction, len(insts))
	for i, in := range insts {
		if r, ok := in.(bpf.RetConstant); ok && r.Val&0xffff0000 == retErrno && notifies(Errno(r.Val&0xffff)) {
			in = bpf.RetConstant{Val: retUserNotif}
		}
		out[i] = in
	}
	return out, nil
}

// Denial is one refused system call as the listener saw it.
type Denial struct {
	Syscall string    `json:"syscall"`
	Rule    string    `json:"rule"`
	Errno   string    `json:"errno"`
	Nr      int       `json:"nr"`
	Args    [6]uint64 `json:"args"`
	Why     string    `json:"why,omitempty"`
	errno   Errno
	allowed bool // the errno filter allows the call (errno is then EPERM)
}

// Decider maps the kernel's seccomp_data of a notified call to the errno
// the ordinary filter returns and the rule that returns it.
type Decider struct {
	vm     *bpf.VM
	goarch string
	names  map[int]string
	rules  map[string]*Rule
}

// NewDecider builds the ordinary (errno) filter for goarch into a BPF VM.
func NewDecider(goarch string, families ...uint32) (*Decider, error) {
	insts, err := Assemble(goarch, families...)
	if err != nil {
		return nil, err
	}
	vm, err := bpf.NewVM(insts)
	if err != nil {
		return nil, fmt.Errorf("seccomp: decider: %w", err)
	}
	info, err := archInfo(goarch)
	if err != nil {
		return nil, err
	}
	d := &Decider{vm: vm, goarch: goarch, names: map[int]string{}, rules: map[string]*Rule{}}
	rules := RulesAllowing(families)
	for i := range rules {
		for _, s := range rules[i].Syscalls {
			d.rules[s] = &rules[i]
			if nr, ok := info.SyscallNames[s]; ok {
				d.names[nr] = s
			}
		}
	}
	return d, nil
}

// Decide evaluates the call (nr, arch and the six arguments of the
// kernel's seccomp_data) with the errno filter. It always returns an
// errno: EPERM when the filter allows the call (fail closed for anything
// but a write call, which the listener lets continue: Allowed).
func (d *Decider) Decide(nr int32, arch uint32, args [6]uint64) Denial {
	// x/net/bpf loads big-endian words; seccomp_data is little-endian on
	// both supported arches, so each 64-bit argument is stored as its low
	// word then its high word (see filter_test.go's seccompData).
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[0:], uint32(nr))
	binary.BigEndian.PutUint32(b[4:], arch)
	for i, a := range args {
		binary.BigEndian.PutUint32(b[16+8*i:], uint32(a))
		binary.BigEndian.PutUint32(b[16+8*i+4:], uint32(a>>32))
	}
	den := Denial{Nr: int(nr), Args: args, Syscall: d.names[int(nr)], errno: EPERM}
	if den.Syscall == "" {
		den.Syscall = fmt.Sprintf("syscall %d", nr)
	}
	if r := d.rules[den.Syscall]; r != nil {
		den.Rule, den.Why = r.Name, r.Why
	}
	out, err := d.vm.Run(b)
	switch {
	case err == nil && uint32(out)&0xffff0000 == retErrno:
		den.errno = Errno(uint32(out) & 0xffff)
	case err == nil && uint32(out) == retAllow:
		den.allowed = true
	}
	den.Errno = den.errno.String()
	return den
}

// Allowed says the errno filter allows the call: only a write call
// (WriteCalls) may then continue.
func (d Denial) Allowed() bool { return d.allowed }

// ErrnoValue is the errno the listener answers with.
func (d Denial) ErrnoValue() Errno { return d.errno }
