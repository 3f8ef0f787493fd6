package decide

// Conflicts and supersession (issue 24 item 3, issue 19 item 3): never two
// notes in force for one title or subject, anywhere in the vault.
//
//   - A draft whose title or subject names a note in force or withheld
//     (conflictindex.go), or whose path holds one, is held (rule conflict),
//     whatever its origin. Notes it names in `supersedes` are left to the
//     supersession rules.
//   - Superseding a note a human wrote or approved (one the gate did not
//     promote on its own), or a note whose type and folder carry more than
//     low risk, always needs a reviewer (rules supersedes-reviewed,
//     supersedes-risk): a trusted profile cannot retire a human's note, or a
//     Runbook, by naming it — deprecated or not.
//   - A reviewer approving a contradicting draft decides (review.go,
//     ApproveOptions): supersede the note in force in the same commit, give
//     the draft another title, or reject it; an approval without a choice
//     fails and names the note.

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/fedmem/fedmem/gate/decide/shape"
	"github.com/fedmem/fedmem/gate/validate"
	"github.com/fedmem/fedmem/vault/note"
)

// Supersession rules (finding rules judge adds).
const (
	RuleSupersedesReviewed = "supersedes-reviewed" // flag: the superseded note is a human's
	RuleSupersedesRisk     = "supersedes-risk"     // flag: the superseded note is not low risk
)

// contradiction is one note in force (or withheld) a draft would stand
// beside with the same name.
type contradiction struct {
	Path     string
	What     string // "title", "subject" or "path"
	Value    string // the draft's value as written
	Line     int
	Withheld bool
	Variant  bool // the same words as the note's name, not the same name (nameKeyOf)
}

func (c contradiction) String() string {
	state := "in force"
	if c.Withheld {
		state = "withheld (its name stays reserved until it is reverified or superseded)"
	}
	if c.What == "path" {
		return fmt.Sprintf("%s (at the target path, %s)", c.Path, state)
	}
	if c.Variant {
		return fmt.Sprintf("%s (its name has the words of the %s %q, %s)", c.Path, c.What, ClipText(c.Value), state)
	}
	return fmt.Sprintf("%s (same %s %q, %s)", c.Path, c.What, ClipText(c.Value), state)
}

// supersededPaths are the clean vault paths a draft names in `supersedes`.
func supersededPaths(res validate.Result) map[string]bool {
	skip := map[string]bool{}
	for _, s := range res.Meta.Supersedes {
		skip[path.Clean(strings.TrimPrefix(s.Value, "/"))] = true
	}
	return skip
}

// Contradictions lists the notes the draft would contradict at hv's
// commit: at dest ("" skips that check), or anywhere with its title or
// subject as their title or subject; self (a note's own path, for
// reverify) and the notes the draft supersedes are left out. One entry per
// path, in the order found.
func Contradictions(res validate.Result, dest, self string, hv *HeadView) ([]contradiction, error) {
	if res.Note == nil {
		return nil, nil
	}
	skip := supersededPaths(res)
	skip[self] = true
	var out []contradiction
	seen := map[string]bool{}
	titleLine := res.Note.KeyLine("title")
	if dest != "" && !skip[dest] {
		e, err := hv.Entry(dest)
		if err != nil {
			return nil, err
		}
		if e != nil && e.Mode.IsFile() {
			f, err := hv.Facts(e.Hash)
			if err != nil {
				return nil, err
			}
			if f.InForce || f.Withheld {
				seen[dest] = true
				out = append(out, contradiction{Path: dest, What: "path", Line: titleLine, Withheld: !f.InForce})
			}
		}
	}
	look := func(what, val string, line int) error {
		k := NormTitle(val)
		if k == "" {
			return nil
		}
		ns, err := hv.named(k)
		if err != nil {
			return err
		}
		for _, n := range ns {
			if skip[n.Path] || seen[n.Path] {
				continue
			}
			seen[n.Path] = true
			out = append(out, contradiction{Path: n.Path, What: what, Value: val, Line: line, Withheld: n.Withheld, Variant: n.Variant})
		}
		return nil
	}
	if err := look("title", res.Meta.Title, titleLine); err != nil {
		return nil, err
	}
	// A number in a title narrows a name to a version or a year of it
	// ("Deployment region 2026"): without its numbers the title is that
	// note's name, and a second note of it in force is a second answer.
	if t := withoutNumbers(res.Meta.Title); t != "" && t != strings.Join(strings.Fields(res.Meta.Title), " ") {
		if err := look("title without its numbers", t, titleLine); err != nil {
			return nil, err
		}
	}
	if v, ok := res.Note.Scalar("subject"); ok {
		if err := look("subject", v, res.Note.KeyLine("subject")); err != nil {
			return nil, err
		}
	}
	// The draft's aliases are names it takes too (factsOf indexes a
	// note's aliases once it is committed).
	for _, e := range shape.NameScalars(res.Note.Get("aliases")) {
		if err := look("alias", e.Value, e.Line); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Conflicts turns the contradictions into findings (rule conflict): the
// note at the target path, and one per field (title, subject). folder is
// not used: a name clashes anywhere in the vault (kept for the callers).
func Conflicts(res validate.Result, folder, dest string, hv *HeadView) ([]note.Finding, error) {
	cs, err := Contradictions(res, dest, "", hv)
	if err != nil {
		return nil, err
	}
	var out []note.Finding
	fields := map[string]bool{}
	for _, c := range cs {
		var msg string
		switch {
		case c.What == "path" && c.Withheld:
			msg = fmt.Sprintf("the target path %s holds a withheld note (its name stays reserved); supersede it (`supersedes: [%s]`) or choose another title", c.Path, c.Path)
		case c.What == "path":
			msg = fmt.Sprintf("the target path %s holds a note in force; supersede it (`supersedes: [%s]`) or choose another title", c.Path, c.Path)
		case fields[c.What]:
			continue // one finding per field is enough
		case c.Withheld:
			fields[c.What] = true
			msg = fmt.Sprintf("a withheld note has the same %s %q: %s (its name stays reserved while it is withheld); supersede it (`supersedes: [%s]`) or narrow this note", c.What, ClipText(c.Value), c.Path, c.Path)
		case c.Variant:
			fields[c.What] = true
			msg = fmt.Sprintf("a note in force is named with the words of the %s %q (another order, other function words or look-alike letters: one subject key): %s; supersede it (`supersedes: [%s]`) or narrow this note", c.What, ClipText(c.Value), c.Path, c.Path)
		default:
			fields[c.What] = true
			msg = fmt.Sprintf("a note in force has the same %s %q: %s; supersede it (`supersedes: [%s]`) or narrow this note", c.What, ClipText(c.Value), c.Path, c.Path)
		}
		out = append(out, note.Finding{Rule: RuleConflict, Line: c.Line, Severity: note.Flag, Path: c.Path, Message: msg})
	}
	return out, nil
}

func init() { evidenceChecks = append(evidenceChecks, supersessionStep) }

// supersessionStep holds a draft that supersedes a note a human wrote or
// approved, or a note of more than low risk (by its own type and folder,
// whatever the draft is): the one retired is what counts, not the type the
// draft declares.
func supersessionStep(in *Input, v *Verdict) error {
	res := in.Result
	if res.Note == nil || in.Head == nil {
		return nil
	}
	for _, ref := range res.Meta.Supersedes {
		target := path.Clean(strings.TrimPrefix(ref.Value, "/"))
		if SourcePathError(target) != "" {
			continue // supersedes-missing says it is not in the vault
		}
		b, err := in.Head(target)
		if err != nil {
			return err
		}
		if b == nil {
			continue
		}
		f := FactsOf(b)
		if !f.GateMade {
			v.Reasons = append(v.Reasons, flag(RuleSupersedesReviewed, ref.Line, "`supersedes` names %s, a note a human wrote or approved (status %s); only a reviewer may retire it", target, statusOr(f.Status)))
		}
		if r := in.Policy.RiskFor(f.Type, path.Dir(target)); r != note.RiskLow {
			v.Reasons = append(v.Reasons, flag(RuleSupersedesRisk, ref.Line, "`supersedes` names %s, a %s note in %s (risk %s); superseding it needs a reviewer", target, ClipText(statusOr(f.Type)), path.Dir(target), r))
		}
	}
	return nil
}

func statusOr(s string) string {
	if s == "" {
		return "absent"
	}
	return s
}

// ErrContradiction is returned when an approval would put a second note in
// force beside one with the same name, and the reviewer made no choice.
var ErrContradiction = errors.New("the draft contradicts a note in force")

// ContradictionError names the notes and the reviewer's options.
func ContradictionError(id string, cs []contradiction) error {
	var b strings.Builder
	for i, c := range cs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(c.String())
	}
	return fmt.Errorf("%w: draft %s would stand beside %s. Decide: `fedmem review approve --supersede %s` (the note is deprecated with superseded_by in the same commit), `fedmem review approve --title 'Another title' %s` (retitle), or `fedmem review reject %s --reason ...`",
		ErrContradiction, id, b.String(), id, id, id)
}

// RestoreConflicts lists why the withheld note at p cannot come back in
// force: another note in force holds its title or subject (a human wrote
// one meanwhile, or a reviewer approved one). The reviewer supersedes one
// of them first, or lets this one go.
func RestoreConflicts(hv *HeadView, p string, f NoteFacts) ([]string, error) {
	var out []string
	seen := map[string]bool{p: true}
	for _, k := range []struct{ what, key string }{{"title", f.Title}, {"subject", f.Subject}} {
		ns, err := hv.named(k.key)
		if err != nil {
			return nil, err
		}
		for _, n := range ns {
			if seen[n.Path] || n.Withheld {
				continue
			}
			seen[n.Path] = true
			out = append(out, fmt.Sprintf("conflict: %s is in force with the same %s (normalised %q); restoring %s would put two notes in force for one name — supersede one of them first", n.Path, k.what, ClipText(k.key), p))
		}
	}
	return out, nil
}

// withoutNumbers is s without its words of digits and number punctuation.
func withoutNumbers(s string) string {
	var ws []string
	for _, w := range strings.Fields(s) {
		if strings.Trim(w, "0123456789.-/:") != "" {
			ws = append(ws, w)
		}
	}
	return strings.Join(ws, " ")
}
