package decide

// Evidence bound to the claim (issue 24): a vault source counts as evidence
// only when it is a note in force that a human vouched for and that is about
// the same subject as the draft. "A file exists" is not evidence: the agent
// contract (00-global/) says how agents behave, not what is true; a
// folder's index.md and log.md are the gate's own lists of agents' titles;
// a draft, deprecated or withheld note is not in force; a note the gate
// promoted on its own is an agent's word (source-unreviewed, evidence.go);
// a note about something else supports nothing the draft says. A source
// that does not count is still recorded and fingerprinted; when none
// counts, no `verified:` entry is written and the draft waits for a
// reviewer (no-evidence names why each source did not count).
//
// "Same subject" is lexical and cheap: more than half of the words of the
// draft's title, and of its `subject` when it has one, beyond function words and with
// plurals folded, are words of the source's title, `subject` or file name
// ("Payments retry budget" cites "Payments retry policy"; "Rotation lesson"
// does not get its authority from "Secret rotation"). It cannot tell a true statement
// from a false one about that subject: that is the conflict check's and
// the verifiers' job.

import (
	"fmt"
	"path"
	"strings"
	"unicode"

	"github.com/fedmem/fedmem/gate/decide/shape"
	"github.com/fedmem/fedmem/gate/validate"
	"github.com/fedmem/fedmem/vault/note"
)

// Source rules (Info on the source; the draft is held by no-evidence when
// no source counts).
const (
	RuleSourceGenerated  = "source-generated"    // index.md or log.md: the gate's own lists
	RuleSourceContract   = "source-contract"     // 00-global/: the agent contract, not a fact
	RuleSourceNotNote    = "source-not-note"     // not a Markdown note with a frontmatter
	RuleSourceNotInForce = "source-not-in-force" // draft, deprecated or withheld
	RuleSourceOffSubject = "source-off-subject"  // shares no subject word with the draft
)

// archiveDir holds retired notes (vault.Folders).
const archiveDir = "99-archive"

// subjectStop are words that name no subject.
var subjectStop = shape.WordSet("fact facts reference references info information update updates summary overview misc general new old current latest detail details answer answers")

// subjectKey folds a word for the subject comparison.
func subjectKey(w string) string {
	w = strings.ToLower(w)
	if strings.ContainsFunc(w, func(r rune) bool { return r >= 0x80 }) {
		w = shape.StripMarks(w) // as NormTitle folds the source's title: "Zürich" is "zurich" on both sides
	}
	w = shape.Stem(w)
	if len(w) < 2 || shape.FunctionWords[w] || subjectStop[w] {
		return ""
	}
	return w
}

// addSubjectWords adds the words of s (split at anything not a letter or a
// digit) to m.
func addSubjectWords(m map[string]bool, s string) {
	for _, w := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if strings.ContainsAny(w, "0123456789") {
			continue // a number or an id names no subject ("Bench note 12", a session id)
		}
		if k := subjectKey(w); k != "" {
			m[k] = true
		}
	}
}

// draftSubject is the draft's subject: the word sets of its title and of
// its `subject`, each compared on its own.
func draftSubject(res validate.Result) []map[string]bool {
	var out []map[string]bool
	t := map[string]bool{}
	addSubjectWords(t, res.Meta.Title)
	out = append(out, t)
	if res.Note != nil {
		if s, ok := res.Note.Scalar("subject"); ok {
			m := map[string]bool{}
			addSubjectWords(m, s)
			out = append(out, m)
		}
	}
	return out
}

// sourceDiscount says why a vault source that resolved to a file at HEAD
// does not count as evidence for the draft ("" when it counts), with the
// rule to cite. f is the source's facts (only read for .md files).
func sourceDiscount(p string, f NoteFacts, subject []map[string]bool) (rule, why string) {
	base := path.Base(p)
	switch {
	case base == "index.md" || base == "log.md":
		return RuleSourceGenerated, "is a folder list the gate writes from agents' own titles"
	case p == "00-global" || strings.HasPrefix(p, "00-global/"):
		return RuleSourceContract, "is part of the agent contract (00-global/), which says how agents work, not what is true"
	case p == archiveDir || strings.HasPrefix(p, archiveDir+"/"):
		// The archive holds what is retired: the conflict index and the
		// sweep leave it out (its names are free again), so it cannot
		// vouch for a claim either — an archived "Production runs in
		// eu-central-1" is not what is true now.
		return RuleSourceNotInForce, "is archived (99-archive/): retired notes are not in force, whatever their status says"
	case !strings.HasSuffix(p, ".md"):
		// A Markdown file without a frontmatter is a note in force (OKF:
		// no status is stable); its file name says what it is about.
		return RuleSourceNotNote, "is not a Markdown note"
	case f.Withheld:
		return RuleSourceNotInForce, "is withheld"
	case !f.InForce:
		return RuleSourceNotInForce, fmt.Sprintf("is not in force (status %s)", f.Status)
	}
	if subject == nil {
		return "", "" // same_subject: false
	}
	src := map[string]bool{}
	addSubjectWords(src, f.Title)
	addSubjectWords(src, f.Subject)
	addSubjectWords(src, strings.TrimSuffix(base, ".md"))
	// Every name the draft takes (its title, its `subject`) must be about
	// the source: a `subject` close to the source's title does not carry a
	// title about something else.
	named := 0
	for _, words := range subject {
		if len(words) == 0 {
			continue
		}
		named++
		shared := 0
		for w := range words {
			if src[w] {
				shared++
			}
		}
		if 2*shared <= len(words) {
			return RuleSourceOffSubject, "is not about the draft's subject (its title, `subject` and file name hold at most half of the words of the draft's title or of its `subject`; both must be about it)"
		}
	}
	if named > 0 {
		return "", ""
	}
	return RuleSourceOffSubject, "is not about the draft's subject (the draft's title and `subject` name no subject word)"
}

// discountFinding is the Info a discounted source gets.
func discountFinding(ref note.Ref, rule, why string) note.Finding {
	return note.Finding{Rule: rule, Line: ref.Line, Severity: note.Info,
		Message: fmt.Sprintf("source %s %s; it is recorded but is not evidence", ClipText(ref.Value), why)}
}
