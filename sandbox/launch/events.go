package launch

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// events appends one JSON object per line to the --events file: the
// session's start, its active layers, network decisions, limits hit and its
// end. Lines are written whole with O_APPEND, so several sessions may share
// one file. Fields are only ever added.
type events struct {
	mu      sync.Mutex
	f       *os.File
	session string
	denials Denials
}

// Denials counts the session's "denied" events for the report.
type Denials struct {
	Total     int            `json:"total"`
	ByKind    map[string]int `json:"by_kind"`
	BySyscall map[string]int `json:"by_syscall,omitempty"` // kind syscall
	// ByOp counts the filesystem denials by operation (open, mkdir,
	// rename, …).
	ByOp map[string]int `json:"by_op,omitempty"`
	// Truncated: more were refused than the sandbox reported one by one.
	Truncated bool `json:"truncated,omitempty"`
}

func (e *events) emit(name string, fields map[string]any) {
	if e == nil {
		return
	}
	if name == "denied" {
		e.count(fields)
	}
	if e.f == nil {
		return
	}
	m := map[string]any{"time": time.Now().UTC().Format(time.RFC3339Nano), "session": e.session, "event": name}
	for k, v := range fields {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	_, _ = e.f.Write(append(b, '\n'))
}

func (e *events) close() {
	if e != nil && e.f != nil {
		e.f.Close()
	}
}

func (e *events) count(fields map[string]any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	d := &e.denials
	if t, _ := fields["truncated"].(bool); t {
		d.Truncated = true
		return
	}
	kind, _ := fields["kind"].(string)
	if d.ByKind == nil {
		d.ByKind = map[string]int{}
	}
	d.Total++
	d.ByKind[kind]++
	switch kind {
	case "syscall":
		if sc, _ := fields["syscall"].(string); sc != "" {
			if d.BySyscall == nil {
				d.BySyscall = map[string]int{}
			}
			d.BySyscall[sc]++
		}
	case "filesystem":
		if op, _ := fields["op"].(string); op != "" {
			if d.ByOp == nil {
				d.ByOp = map[string]int{}
			}
			d.ByOp[op]++
		}
	}
}

// counted is the report's denials, nil when there were none.
func (e *events) counted() *Denials {
	if e == nil {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.denials.Total == 0 && !e.denials.Truncated {
		return nil
	}
	d := e.denials
	return &d
}

// persistenceWarning is one line for a "persistence" event: what was moved
// aside and where, what could not be, or what was not checked.
func persistenceWarning(f map[string]any) string {
	switch {
	case f["covers_lost"] != nil:
		return fmt.Sprintf("persistence: a protection was detached during the session (%v): the protected names were checked after it", f["covers_lost"])
	case f["moved_to"] != nil && f["error"] == nil:
		why := ""
		if f["why"] != nil {
			why = fmt.Sprintf(" (%v)", f["why"])
		}
		return fmt.Sprintf("persistence: %v moved aside to %v%s; restore it with mv if it is yours", f["path"], f["moved_to"], why)
	case f["moved_to"] != nil:
		return fmt.Sprintf("persistence: %v could not be moved aside to %v: %v — it may make a tool run the agent's code; check it before you use it", f["path"], f["moved_to"], f["error"])
	}
	return fmt.Sprintf("persistence: %v: %v — check it before you use it", f["path"], f["error"])
}

// instructionsWarning is the one line naming the instruction files
// (profiles.InstructionFiles) the session made or changed; "" for none.
func instructionsWarning(paths []string) string {
	if len(paths) == 0 {
		return ""
	}
	sort.Strings(paths)
	return fmt.Sprintf("instructions: the session changed %d file(s) your next agent reads as instructions: %s — review them before an agent runs there (a profile's `instructions: read-only` holds them)", len(paths), strings.Join(paths, ", "))
}
