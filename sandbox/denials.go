package sandbox

// MsgDenied: the kernel refused something the agent asked for; Denial set.
const MsgDenied MsgType = "denied"

// Denied is one refusal the sandbox observed, as it reaches --events (the
// "denied" event) and the session report's counts. Kind is "syscall" (a
// seccomp rule refused the call) or "filesystem" (a write the kernel is
// expected to refuse: Op and Path say what, Errno the errno predicted; see
// docs/events.md for what is and is not observed).
type Denied struct {
	Kind    string   `json:"kind"`
	Op      string   `json:"op,omitempty"`
	Path    string   `json:"path,omitempty"`
	Syscall string   `json:"syscall,omitempty"`
	Rule    string   `json:"rule,omitempty"`
	Errno   string   `json:"errno,omitempty"`
	Args    []uint64 `json:"args,omitempty"`
	Pid     int      `json:"pid,omitempty"` // in the sandbox's pid namespace
	Hint    string   `json:"hint,omitempty"`
	// Truncated: the init stopped reporting individual denials here (a
	// flood); later ones are refused the same way but not reported.
	Truncated bool `json:"truncated,omitempty"`
}

// FSDenialsOffNote is what the layers (and --explain) say when refused
// filesystem writes are not reported.
const FSDenialsOffNote = "refused filesystem writes are not reported (--fs-denials or --events turns it on)"

// Fields is the event's fields.
func (d *Denied) Fields() map[string]any {
	m := map[string]any{"kind": d.Kind, "hint": d.Hint}
	switch {
	case d.Truncated:
	case d.Kind == "filesystem":
		m["op"], m["path"], m["syscall"], m["errno"], m["pid"] = d.Op, d.Path, d.Syscall, d.Errno, d.Pid
	case d.Syscall != "":
		m["syscall"], m["rule"], m["errno"], m["args"], m["pid"] = d.Syscall, d.Rule, d.Errno, d.Args, d.Pid
	}
	if d.Truncated {
		m["truncated"] = true
	}
	return m
}
