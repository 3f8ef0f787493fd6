package note

import "fmt"

// Severity says what a Finding does to a draft's decision.
type Severity string

const (
	// Error makes the draft invalid: it is rejected.
	Error Severity = "error"
	// Flag holds the draft for human review (pending).
	Flag Severity = "flag"
	// Info is recorded in the receipt and changes nothing.
	Info Severity = "info"
)

// Finding is one problem found in a draft. Line is 1-based and counts lines
// of the whole draft (frontmatter included); 0 means the draft as a whole.
type Finding struct {
	Rule     string   `json:"rule"`
	Line     int      `json:"line"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
	// Path is the vault note a finding is about, when it is about one (a
	// conflict names the note in force it clashes with): what a reviewer's
	// tools follow, instead of parsing Message.
	Path string `json:"path,omitempty"`
}

func (f Finding) String() string {
	if f.Line > 0 {
		return fmt.Sprintf("line %d: %s: %s (%s)", f.Line, f.Severity, f.Message, f.Rule)
	}
	return fmt.Sprintf("%s: %s (%s)", f.Severity, f.Message, f.Rule)
}

func errf(rule string, line int, format string, args ...any) Finding {
	return Finding{Rule: rule, Line: line, Severity: Error, Message: fmt.Sprintf(format, args...)}
}

// HasErrors reports whether any finding is an Error.
func HasErrors(fs []Finding) bool {
	for _, f := range fs {
		if f.Severity == Error {
			return true
		}
	}
	return false
}

// HasFlags reports whether any finding is a Flag.
func HasFlags(fs []Finding) bool {
	for _, f := range fs {
		if f.Severity == Flag {
			return true
		}
	}
	return false
}
