package note

import (
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// OKF v0.2 status values. Absent means Stable.
const (
	StatusDraft      = "draft"
	StatusStable     = "stable"
	StatusDeprecated = "deprecated"
)

// fedmem confidence and risk values.
const (
	ConfidenceVerified   = "verified"
	ConfidenceHypothesis = "hypothesis"
	RiskLow              = "low"
	RiskMedium           = "medium"
	RiskHigh             = "high"
)

// GateOwned are the keys whose draft values never count: everything a draft
// says about its own trust (status, verification, authorship, confidence,
// risk, review). The gate moves them under `claimed:` and writes its own.
// They match in any letter case and after Unicode compatibility folding
// (IsGateOwned): `Status:`, `VERIFIED:` and `ｓｔａｔｕｓ:` are the same claim.
var GateOwned = []string{
	"status", "verified", "generated", "stale_after", "confidence", "risk",
	"superseded_by", "claimed", "reviewer", "reviewers", "reviewed_by",
	"approved_by", "approved", "verified_by", "origin", "profile", "session",
	// Written by the gate: sweep's `withheld`, a source's `fingerprint`.
	"withheld", "fingerprint",
}

// AuthorKeys are the top-level keys a draft's author writes and a reader
// acts on: OKF v0.2's descriptive fields and fedmem's `subject` and
// `aliases` (what a note is about, for evidence and conflicts). With
// GateOwned they are every key the gate knows; any other key is a field no
// reader acts on (a typo such as `titel`, or text aimed at the next agent),
// and the gate holds the draft for a reviewer (gate: `unknown-field`).
var AuthorKeys = []string{
	"type", "title", "description", "subject", "aliases", "tags", "sources",
	"supersedes", "created", "updated", "last_modified",
}

var authorKeys = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range AuthorKeys {
		m[k] = true
	}
	return m
}()

// IsKnownKey reports whether a top-level key is one the gate knows: an
// author key exactly as spelt, or a gate-owned key in any letter case.
func IsKnownKey(key string) bool { return authorKeys[key] || IsGateOwned(key) }

var gateOwned = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range GateOwned {
		m[k] = true
	}
	return m
}()

// FoldKey is the form two keys are compared in: Unicode compatibility
// normalisation (NFKC: fullwidth and other look-alike forms become ASCII),
// then full case folding (`ſ` and `K` (Kelvin) fold to `s` and `k`), then
// lower case.
func FoldKey(k string) string {
	if isLowerASCII(k) {
		return k
	}
	// A cases.Caser holds state and must not be shared between
	// goroutines; keys that need folding are rare, so make one per call.
	return strings.ToLower(cases.Fold().String(norm.NFKC.String(k)))
}

func isLowerASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 0x80 || (c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// IsGateOwned reports whether key names a gate-owned key in any letter case
// or Unicode compatibility form (see GateOwned).
func IsGateOwned(key string) bool { return gateOwned[FoldKey(key)] }

// Meta is what the gate reads from a valid frontmatter. Every value is the
// author's text; nothing here is trusted provenance.
type Meta struct {
	Type       string
	TypeLine   int
	Title      string
	Confidence string // verified | hypothesis (default hypothesis)
	Risk       string // low | medium | high, "" if not declared
	RiskLine   int
	Supersedes []Ref
	Sources    []Ref
}

// Ref is a path or URL a field points at, with its line.
type Ref struct {
	Value string
	Line  int
}

var (
	typeRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_.-]{0,63}$`)
	keyRe  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]{0,63}$`)
)

// Check verifies the OKF v0.2 shape and the fedmem keys, normalises date-only
// timestamps in place (to midnight UTC) and returns what the gate needs.
func Check(n *Note) (Meta, []Finding) {
	var m Meta
	var out []Finding
	folded := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Front.Content); i += 2 {
		k := n.Front.Content[i]
		if !keyRe.MatchString(k.Value) {
			out = append(out, errf("okf-key", k.Line, "key %q: keys are ASCII letters, digits, '_' and '-' (at most 64)", k.Value))
		}
		// Two keys that differ only in letter case (`status` and `Status`)
		// would be one key to a reader that folds case and two to one that
		// does not; a draft does not get to choose which a reader sees.
		f := FoldKey(k.Value)
		if first, dup := folded[f]; dup {
			out = append(out, errf("okf-key-case", k.Line, "key %q is key %q (line %d) in another letter case; write it once", k.Value, first.Value, first.Line))
			continue
		}
		folded[f] = k
	}
	tv := n.Get("type")
	switch {
	case tv == nil:
		out = append(out, errf("okf-type", n.Front.Line, "`type` is required (OKF v0.2)"))
	case tv.Kind != yaml.ScalarNode || !typeRe.MatchString(tv.Value):
		out = append(out, errf("okf-type", tv.Line, "`type` must be a word such as Fact or Decision (letters, digits, '_', '.', '-'; at most 64)"))
	default:
		m.Type, m.TypeLine = tv.Value, tv.Line
	}
	// `subject` names the note as its title does: one string (a list
	// would be a name the conflict index and the subject rules never read).
	for _, key := range []string{"title", "description", "subject"} {
		if v := n.Get(key); v != nil && v.Kind != yaml.ScalarNode {
			out = append(out, errf("okf-"+key, v.Line, "`%s` must be a single string", key))
		} else if v != nil && key == "title" {
			m.Title = v.Value
		}
	}
	out = enum(n, "status", []string{StatusDraft, StatusStable, StatusDeprecated}, out)
	out = enum(n, "confidence", []string{ConfidenceVerified, ConfidenceHypothesis}, out)
	out = enum(n, "risk", []string{RiskLow, RiskMedium, RiskHigh}, out)
	m.Confidence = ConfidenceHypothesis
	if v, ok := n.Scalar("confidence"); ok && v == ConfidenceVerified {
		m.Confidence = v
	}
	if v := n.Get("risk"); v != nil && v.Kind == yaml.ScalarNode {
		m.Risk, m.RiskLine = v.Value, v.Line
	}
	if v := n.Get("tags"); v != nil {
		out = stringList(v, "tags", out)
	}
	if v := n.Get("aliases"); v != nil {
		// Names, like `title`: a nested list is a name no reader of
		// aliases (the conflict index) sees.
		out = stringList(v, "aliases", out)
	}
	for _, key := range []string{"stale_after", "created", "updated", "last_modified"} {
		if v := n.Get(key); v != nil {
			out = timestamp(v, key, out)
		}
	}
	if v := n.Get("generated"); v != nil {
		out = actorEntry(v, "generated", out)
	}
	if v := n.Get("verified"); v != nil {
		if v.Kind != yaml.SequenceNode {
			out = append(out, errf("okf-verified", v.Line, "`verified` must be a list of {by, at} entries"))
		} else {
			for _, e := range v.Content {
				out = actorEntry(e, "verified", out)
			}
		}
	}
	if v := n.Get("sources"); v != nil {
		if v.Kind != yaml.SequenceNode {
			out = append(out, errf("okf-sources", v.Line, "`sources` must be a list"))
		} else {
			for _, e := range v.Content {
				switch e.Kind {
				case yaml.ScalarNode:
					m.Sources = append(m.Sources, Ref{e.Value, e.Line})
				case yaml.MappingNode:
					r := MapGet(e, "resource")
					if r == nil || r.Kind != yaml.ScalarNode || r.Value == "" {
						out = append(out, errf("okf-sources", e.Line, "each source needs a `resource` string"))
					} else {
						m.Sources = append(m.Sources, Ref{r.Value, r.Line})
					}
					if a := MapGet(e, "author"); a != nil {
						out = actor(a, "sources.author", out)
					}
					if t := MapGet(e, "last_modified"); t != nil {
						out = timestamp(t, "sources.last_modified", out)
					}
				default:
					out = append(out, errf("okf-sources", e.Line, "each source is a string or a mapping with `resource`"))
				}
			}
		}
	}
	for _, key := range []string{"supersedes", "superseded_by"} {
		v := n.Get(key)
		if v == nil {
			continue
		}
		out = stringList(v, key, out)
		if key == "supersedes" {
			if v.Kind == yaml.ScalarNode {
				m.Supersedes = append(m.Supersedes, Ref{v.Value, v.Line})
			} else {
				for _, e := range v.Content {
					m.Supersedes = append(m.Supersedes, Ref{e.Value, e.Line})
				}
			}
		}
	}
	if v := n.Get("claimed"); v != nil {
		out = append(out, errf("gate-owned", n.KeyLine("claimed"), "`claimed` is written by the gate; a draft may not set it"))
	}
	return m, out
}

func enum(n *Note, key string, allowed []string, out []Finding) []Finding {
	v := n.Get(key)
	if v == nil {
		return out
	}
	if v.Kind == yaml.ScalarNode {
		for _, a := range allowed {
			if v.Value == a {
				return out
			}
		}
	}
	return append(out, errf("okf-"+key, v.Line, "`%s` must be one of %s", key, strings.Join(allowed, "|")))
}

func stringList(v *yaml.Node, key string, out []Finding) []Finding {
	if v.Kind == yaml.ScalarNode {
		return out
	}
	if v.Kind == yaml.SequenceNode {
		for _, e := range v.Content {
			if e.Kind != yaml.ScalarNode {
				return append(out, errf("okf-"+key, e.Line, "`%s` must be a string or a list of strings", key))
			}
		}
		return out
	}
	return append(out, errf("okf-"+key, v.Line, "`%s` must be a string or a list of strings", key))
}

func actorEntry(v *yaml.Node, key string, out []Finding) []Finding {
	if v.Kind != yaml.MappingNode {
		return append(out, errf("okf-"+key, v.Line, "`%s` entries are mappings with `by` and `at`", key))
	}
	by := MapGet(v, "by")
	if by == nil {
		out = append(out, errf("okf-"+key, v.Line, "`%s` needs `by` (an actor)", key))
	} else {
		out = actor(by, key+".by", out)
	}
	if at := MapGet(v, "at"); at != nil {
		out = timestamp(at, key+".at", out)
	}
	return out
}

func actor(v *yaml.Node, key string, out []Finding) []Finding {
	if v.Kind != yaml.ScalarNode || v.Value == "" || len(v.Value) > 200 || strings.ContainsAny(v.Value, "\n\r\t") {
		return append(out, errf("okf-actor", v.Line, "`%s` must be an actor string such as human:alice or process:ci (one line, at most 200)", key))
	}
	return out
}

// timestamp checks an ISO 8601 datetime with an explicit offset, or a date,
// and rewrites a date to midnight UTC.
func timestamp(v *yaml.Node, key string, out []Finding) []Finding {
	if v.Kind != yaml.ScalarNode {
		return append(out, errf("okf-timestamp", v.Line, "`%s` must be an ISO 8601 datetime with an offset", key))
	}
	norm, ok := NormalizeTime(v.Value)
	if !ok {
		return append(out, errf("okf-timestamp", v.Line, "`%s`: %q is not an ISO 8601 datetime with an offset (e.g. 2026-09-09T01:40:00Z) or a date", key, v.Value))
	}
	if norm != v.Value {
		v.Value, v.Tag, v.Style = norm, "!!str", 0
	}
	return out
}

// NormalizeTime accepts RFC 3339 datetimes (an offset is required) and
// YYYY-MM-DD dates; a date becomes midnight UTC.
func NormalizeTime(s string) (string, bool) {
	if len(s) == len("2006-01-02") {
		t, err := time.Parse("2006-01-02", s)
		if err != nil {
			return "", false
		}
		return t.UTC().Format(time.RFC3339), true
	}
	if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
		return "", false
	}
	return s, true
}
