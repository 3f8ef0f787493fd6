package validate

import (
	"sort"

	"github.com/fedmem/fedmem/vault/note"
)

// Result is the outcome of validating one draft's bytes.
type Result struct {
	// Note is nil when the frontmatter could not be parsed.
	Note     *note.Note
	Meta     note.Meta
	Findings []note.Finding
}

// Draft runs every byte-level check (encoding, characters, injection,
// secrets) and the frontmatter/OKF checks. Secrets are scanned even when the
// frontmatter is broken, so the audit log records that a secret was offered.
// Links are checked separately (Links) once the gate knows where the note
// would live. An error means a check could not run (the draft must not be
// promoted).
func Draft(b []byte) (Result, error) {
	var r Result
	r.Findings = append(r.Findings, Text(b)...)
	r.Findings = append(r.Findings, Injection(b)...)
	sec, err := Secrets(b)
	if err != nil {
		return r, err
	}
	r.Findings = append(r.Findings, sec...)
	n, fs := note.Parse(b)
	r.Findings = append(r.Findings, fs...)
	if n != nil {
		m, fs := note.Check(n)
		r.Note, r.Meta = n, m
		r.Findings = append(r.Findings, fs...)
	}
	Sort(r.Findings)
	return r, nil
}

// Links checks the links of a parsed note that will live in dir: body links,
// `sources` resources and `supersedes` paths.
func Links(r Result, dir string) []note.Finding {
	if r.Note == nil {
		return nil
	}
	var out []note.Finding
	lim := limiter{}
	for _, ref := range BodyLinks(r.Note.Body, r.Note.BodyLine) {
		if f := Link(ref, dir, "link"); f != nil {
			out = lim.add(out, *f)
		}
	}
	for _, ref := range r.Meta.Sources {
		if f := Link(ref, dir, "link-source"); f != nil {
			out = lim.add(out, *f)
		}
	}
	for _, ref := range r.Meta.Supersedes {
		if schemeRe.MatchString(ref.Value) {
			out = lim.add(out, note.Finding{Rule: "supersedes", Line: ref.Line, Severity: note.Error,
				Message: "`supersedes` must be a vault path of a note, not a URL"})
		} else if f := Link(note.Ref{Value: "/" + ref.Value, Line: ref.Line}, dir, "supersedes"); f != nil {
			out = lim.add(out, *f)
		}
	}
	Sort(out)
	return out
}

// Sort orders findings by line, then rule, for stable receipts.
func Sort(fs []note.Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		if fs[i].Line != fs[j].Line {
			return fs[i].Line < fs[j].Line
		}
		return fs[i].Rule < fs[j].Rule
	})
}
