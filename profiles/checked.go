package profiles

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// RuleError is a rule of Check that a profile breaks. Field and Value name
// the offending setting, so that LoadChecked can point at the file and line
// that set it.
type RuleError struct {
	Field string // dotted key, e.g. "writable" or "home.writable"
	Value string // the offending list item or scalar
	Rule  string // the rule's name, e.g. "writable-system-dir"
	Msg   string
	// Src and Line, when known, locate the setting (set by LoadChecked).
	Src  string
	Line int
}

func (e *RuleError) Error() string {
	loc := ""
	if e.Src != "" {
		loc = e.Src + ": "
		if e.Line > 0 {
			loc = fmt.Sprintf("%s:%d: ", e.Src, e.Line)
		}
	}
	return fmt.Sprintf("%s%s (rule %s)", loc, e.Msg, e.Rule)
}

// ErrBreaksRule marks a profile that loads but breaks a rule of Check.
var ErrBreaksRule = errors.New("breaks a rule of `fedmem profile check`")

// LoadChecked is Load followed by Check: what fedmem-run and `fedmem profile
// check` both run. A profile that breaks a rule is an error (wrapping
// ErrBreaksRule) whose messages name the file, the line and the rule; the
// warnings are returned either way.
func LoadChecked(nameOrFile string) (*Profile, string, []string, error) {
	return LoadCheckedFrom(nameOrFile, nil)
}

// LoadCheckedFrom is LoadChecked with a search path for names (LoadFrom).
func LoadCheckedFrom(nameOrFile string, search []SearchDir) (*Profile, string, []string, error) {
	p, hash, err := LoadFrom(nameOrFile, search)
	if err != nil {
		return nil, "", nil, err
	}
	warns, errs := Check(p)
	if len(errs) == 0 {
		return p, hash, warns, nil
	}
	for _, e := range errs {
		var re *RuleError
		if errors.As(e, &re) {
			re.Src, re.Line = locate(nameOrFile, search, re.Field, re.Value)
		}
	}
	return nil, "", warns, &CheckError{Profile: nameOrFile, Errs: errs}
}

// CheckError lists the rules a profile breaks (LoadChecked).
type CheckError struct {
	Profile string
	Errs    []error
}

func (e *CheckError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "profile %s %v (see `fedmem profile check %s`):", e.Profile, ErrBreaksRule, e.Profile)
	for _, x := range e.Errs {
		b.WriteString("\n  " + x.Error())
	}
	return b.String()
}

// Is makes errors.Is(err, ErrBreaksRule) hold.
func (e *CheckError) Is(target error) bool { return target == ErrBreaksRule }

// locate finds the file (following extends from the named profile) and the
// line that set field to value; the named source and line 0 when not found.
func locate(nameOrFile string, search []SearchDir, field, value string) (string, int) {
	first := ""
	l := &loader{search: search, seen: map[string]bool{}}
	from := ""
	for name := nameOrFile; name != ""; {
		src, data, err := l.read(name, from)
		if err != nil || l.seen[src] {
			break
		}
		l.seen[src] = true
		if first == "" {
			first = src
		}
		var doc yaml.Node
		if yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc) != nil || len(doc.Content) == 0 {
			break
		}
		if line := findLine(doc.Content[0], strings.Split(field, "."), value); line > 0 {
			return src, line
		}
		name, from = "", src
		if ext := lookup(doc.Content[0], "extends"); ext != nil {
			name = ext.Value
		}
	}
	return first, 0
}

func lookup(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func findLine(n *yaml.Node, path []string, value string) int {
	for _, k := range path {
		if n = lookup(n, k); n == nil {
			return 0
		}
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Value == value {
			return n.Line
		}
	case yaml.SequenceNode:
		for _, c := range n.Content {
			if c.Kind == yaml.ScalarNode && c.Value == value {
				return c.Line
			}
		}
	}
	return 0
}
