package policy

import (
	"slices"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// Shape is the content a note of one type must have to promote without a
// reviewer (auto_promote.shapes; gate/decide/shape/shape.go checks it). It is an
// allow-list: what a note may be, never a list of what is bad. A note
// outside its type's shape is held for review with the rule named, never
// rejected for it alone.
type Shape struct {
	// Type is the note type the shape is for, as the policy spells it.
	Type string
	// MaxBytes bounds the body.
	MaxBytes int
	// MaxSentenceWords bounds one sentence (runbooks and injected payloads
	// run long; a fact is short).
	MaxSentenceWords int
	// Scripts are the Unicode scripts letters may come from (unicode.Scripts
	// names: Latin, Greek, Cyrillic, Han…). Digits are ASCII; punctuation
	// is a fixed set (docs/policy.md).
	Scripts []string
	// Language "en" asks that prose be English sentences: each sentence of
	// four or more words holds one of a closed set of English function
	// words (articles, auxiliaries, prepositions, pronouns), and none opens
	// as an instruction. "none" checks characters and tokens only.
	Language string
	// Line is where the shape is defined (0: built in).
	Line int
}

// Built-in shape bounds.
const (
	DefaultShapeMaxBytes      = 4096
	DefaultShapeSentenceWords = 60
)

// DefaultShapes are the shapes used when auto_promote has no `shapes`: a
// Fact and a Reference are short declarative English prose in Latin script.
// Every other type (Workflow, Runbook, Skill, Adapter, Decision, …) has no
// shape and never promotes on its own.
func DefaultShapes() map[string]*Shape {
	m := map[string]*Shape{}
	for _, t := range []string{"Fact", "Reference"} {
		m[strings.ToLower(t)] = &Shape{Type: t, MaxBytes: DefaultShapeMaxBytes, MaxSentenceWords: DefaultShapeSentenceWords,
			Scripts: []string{"Latin"}, Language: "en"}
	}
	return m
}

// ShapeFor returns the shape of a note type (case-insensitive), nil when the
// type has none.
func (a *AutoPromote) ShapeFor(typ string) *Shape {
	if a.Shapes == nil {
		return DefaultShapes()[strings.ToLower(typ)]
	}
	return a.Shapes[strings.ToLower(typ)]
}

// ShapeTypes lists the types that have a shape, sorted.
func (a *AutoPromote) ShapeTypes() []string {
	m := a.Shapes
	if m == nil {
		m = DefaultShapes()
	}
	var out []string
	for _, s := range m {
		out = append(out, s.Type)
	}
	slices.Sort(out)
	return out
}

// AllowsScript reports whether letter r's script is one the shape allows.
func (s *Shape) AllowsScript(r rune) bool {
	for _, name := range s.Scripts {
		if t := unicode.Scripts[name]; t != nil && unicode.Is(t, r) {
			return true
		}
	}
	return false
}

// shapes parses auto_promote.shapes.
func (c *checker) shapes(v *yaml.Node) map[string]*Shape {
	out := map[string]*Shape{}
	c.mapping(v, "auto_promote.shapes", func(typ string, sv *yaml.Node) {
		what := "auto_promote.shapes." + typ
		s := &Shape{Type: typ, MaxBytes: DefaultShapeMaxBytes, MaxSentenceWords: DefaultShapeSentenceWords,
			Scripts: []string{"Latin"}, Language: "en", Line: sv.Line}
		if _, dup := out[strings.ToLower(typ)]; dup {
			c.errf(sv, "%s: the type appears twice (types compare case-insensitively)", what)
		}
		if sv.Kind == yaml.ScalarNode && sv.Value == "" || sv.Tag == "!!null" {
			out[strings.ToLower(typ)] = s // `Fact:` alone: the built-in bounds
			return
		}
		c.mapping(sv, what, func(k string, kv *yaml.Node) {
			switch k {
			case "max_bytes":
				s.MaxBytes = c.int(kv, what+".max_bytes", 64, 1<<20)
			case "max_sentence_words":
				s.MaxSentenceWords = c.int(kv, what+".max_sentence_words", 3, 1000)
			case "scripts":
				s.Scripts = c.strings(kv, what+".scripts")
				for i, name := range s.Scripts {
					if unicode.Scripts[name] == nil || name == "Common" || name == "Inherited" {
						c.errf(kv.Content[i], "%s.scripts: %q is not a Unicode script name (Latin, Greek, Cyrillic, Han, …; see docs/policy.md)", what, name)
					}
				}
				if len(s.Scripts) == 0 {
					c.errf(kv, "%s.scripts must name at least one script", what)
				}
			case "language":
				s.Language = c.str(kv, what+".language")
				if s.Language != "en" && s.Language != "none" {
					c.errf(kv, "%s.language must be en or none (got %q)", what, s.Language)
				}
			default:
				c.unknown(sv, "auto_promote.shapes."+typ, k)
			}
		})
		out[strings.ToLower(typ)] = s
	})
	return out
}
