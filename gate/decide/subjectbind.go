package decide

// The claim bound to its evidence (issue 24, the open red-team drafts): a
// source that counts (sources.go: in force, a human's, about the draft's
// subject by its title words) binds two more things.
//
//   - The draft's names are written as its sources' are (rule
//     subject-script). A word of the draft's title, `subject`, aliases or
//     tags whose letters are of a kind no counted source's name uses — a
//     letter with a diacritic, or another script, beside sources named in
//     plain ASCII — is bound only if it is itself a word of a source's name.
//     "CI test suite überspringen" citing "CI test suite" shares three words
//     of four (the subject test passes) and its fourth is an instruction in
//     another language: the script of the names, not a list of words, says
//     it is not the sources' subject. A vault whose notes are named in
//     German or Cyrillic binds its own letters.
//   - The draft does not restate its source otherwise (rule
//     conflict-restated). A sentence of the draft whose head — the words
//     before its verb and the verb — is the head of a sentence of a counted
//     source says something about the same thing the source says; when it
//     uses a word the source's sentence does not (articles aside), it says
//     it differently: "A merge needs only the unit suite to pass" against
//     "A merge needs all three to pass". A narrower title ("CI test suite
//     merge rule") does not make it another subject. Restating in the
//     source's words ("Production runs in us-east-1" against "Production
//     runs in the us-east-1 region") is agreement and passes.
//
// Both are Flags: the draft waits for a reviewer. The head is found by
// grammar alone (the first auxiliary, or the first word after the first
// that has the -s of a verb), the same on both sides, so a restatement in
// the source's wording is always compared; a paraphrase with another head
// is not (docs/policy.md, Known gaps).

import (
	"fmt"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/fedmem/fedmem/gate/decide/shape"
	"github.com/fedmem/fedmem/gate/validate"
	"github.com/fedmem/fedmem/vault/note"
	"github.com/fedmem/fedmem/vault/repo"
)

// Rules of this file (Flags).
const (
	RuleSubjectScript    = "subject-script"    // a name word in letters no counted source's name uses
	RuleConflictRestated = "conflict-restated" // a sentence restates a source's sentence with other words
	RuleSubjectLabel     = "subject-label"     // a tag, alias, source label or URL word that names nothing of the note's subject
)

// countedSource is a vault source that counts as evidence.
type countedSource struct {
	Path  string
	Blob  repo.Hash
	Facts NoteFacts
}

// Bounds: sources compared, bytes of each read, sentences of each.
const (
	maxBoundSources   = 8
	maxBoundBytes     = 16 << 10
	maxBoundSentences = 200
)

// letter kinds of a name word.
const (
	letterASCII  = 1 << iota // a-z
	letterMarked             // a Latin letter beyond ASCII (ü, ß, é)
	letterOther              // a letter of another script
)

// letterKinds returns the kinds of the letters of s and, for other scripts,
// their names.
func letterKinds(s string, scripts map[string]bool) int {
	k := 0
	for _, r := range s {
		switch {
		case r < utf8.RuneSelf:
			if r|0x20 >= 'a' && r|0x20 <= 'z' {
				k |= letterASCII
			}
		case !unicode.IsLetter(r):
		case unicode.Is(unicode.Latin, r):
			k |= letterMarked
		default:
			k |= letterOther
			if scripts != nil {
				scripts[scriptName(r)] = true
			}
		}
	}
	return k
}

func scriptName(r rune) string {
	for name, t := range unicode.Scripts {
		if name != "Common" && name != "Inherited" && unicode.Is(t, r) {
			return name
		}
	}
	return "?"
}

func nameWords(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.Mn, r) })
}

// boundToSources checks the draft's names and sentences against the
// sources that count.
func boundToSources(res validate.Result, counted []countedSource, hv *HeadView) ([]note.Finding, error) {
	if res.Note == nil {
		return nil, nil
	}
	if len(counted) > maxBoundSources {
		counted = counted[:maxBoundSources]
	}
	texts := make([]*boundText, len(counted))
	for i, c := range counted {
		bt, err := hv.boundText(c.Blob)
		if err != nil {
			return nil, err
		}
		texts[i] = bt
	}
	out := scriptBound(res, counted, texts)
	out = append(out, labelBound(res, counted)...)
	out = append(out, restated(res, counted, texts)...)
	out = append(out, grounded(res, groundSources(counted, texts))...) // grounding.go
	off, err := offSubject(res, counted, hv)                           // offsubject.go
	if err != nil {
		return nil, err
	}
	return append(out, off...), nil
}

// boundText is what the rules read of a source's body: the kinds of its
// letters, its words (shape.NameKey) and its sentences by head. Cached by blob
// id (a source is cited by many drafts; its blob never changes).
type boundText struct {
	body      string // the body's text, white space folded (grounding.go)
	kinds     int
	scripts   map[string]bool
	words     map[string]bool
	sentences []srcSentence
}

type srcSentence struct {
	head, text string
	words      map[string]bool
}

var boundCache = struct {
	sync.Mutex
	m map[repo.Hash]*boundText
}{m: map[repo.Hash]*boundText{}}

const maxBoundCache = 4096

func (hv *HeadView) boundText(blob repo.Hash) (*boundText, error) {
	boundCache.Lock()
	bt := boundCache.m[blob]
	boundCache.Unlock()
	if bt != nil {
		return bt, nil
	}
	b, err := readBlobPrefix(hv.r, blob, maxBoundBytes)
	if err != nil {
		return nil, err
	}
	bt = &boundText{scripts: map[string]bool{}, words: map[string]bool{}}
	if n, _ := note.Parse(b); n != nil {
		body := strings.Join(strings.Fields(string(n.Body)), " ")
		bt.body = body
		bt.kinds = letterKinds(body, bt.scripts)
		for _, w := range nameWords(body) {
			bt.words[shape.NameKey(w)] = true
		}
		for i, s := range shape.SplitSentences(body) {
			if i == maxBoundSentences {
				break
			}
			h, rest := sentenceHead(s)
			if h == "" {
				continue
			}
			m := map[string]bool{}
			for _, w := range rest {
				m[w] = true
			}
			bt.sentences = append(bt.sentences, srcSentence{h, s, m})
		}
	}
	boundCache.Lock()
	if len(boundCache.m) >= maxBoundCache {
		boundCache.m = map[repo.Hash]*boundText{}
	}
	boundCache.m[blob] = bt
	boundCache.Unlock()
	return bt, nil
}

// scriptBound: rule subject-script.
func scriptBound(res validate.Result, counted []countedSource, texts []*boundText) []note.Finding {
	words := map[string]bool{}
	kinds := 0
	scripts := map[string]bool{}
	// The sources' text: its letters and words bind the draft's body (a
	// source that names São Paulo lets the draft name it too).
	textKinds := 0
	textScripts := map[string]bool{}
	for _, t := range texts {
		textKinds |= t.kinds
		for s := range t.scripts {
			textScripts[s] = true
		}
	}
	inText := func(k string) bool {
		for _, t := range texts {
			if t.words[k] {
				return true
			}
		}
		return false
	}
	for _, c := range counted {
		names := append([]string{c.Facts.Title, c.Facts.Subject, NormTitle(strings.TrimSuffix(path.Base(c.Path), ".md"))}, c.Facts.Aliases...)
		for _, n := range names {
			kinds |= letterKinds(n, scripts)
			for _, w := range strings.Fields(n) {
				words[w] = true
			}
		}
	}
	type name struct {
		what, val string
		line      int
	}
	var names []name
	if res.Meta.Title != "" {
		names = append(names, name{"title", res.Meta.Title, res.Note.KeyLine("title")})
	}
	for _, key := range []string{"subject", "aliases", "tags"} {
		for _, e := range shape.NameScalars(res.Note.Get(key)) {
			names = append(names, name{key, e.Value, e.Line})
		}
	}
	for _, n := range names {
		for _, w := range nameWords(n.val) {
			ws := map[string]bool{}
			k := letterKinds(w, ws)
			fits := k&^kinds == 0
			for s := range ws {
				fits = fits && scripts[s]
			}
			if fits || words[shape.NameKey(w)] {
				continue
			}
			return []note.Finding{flag(RuleSubjectScript, n.line, "the %s word %q is written in letters (%s) that no name of its sources uses (%s), and is not a word of one: the subject a note shares with its evidence is named as the evidence names it; a word in another language or script is held for a reviewer",
				n.what, clip(w), kindName(k&^kinds, ws), sourceNames(counted))}
		}
	}
	// The body: a word in letters neither the sources' names nor their
	// text use, and not one of their words ("The CI test suite
	// überspringen on release branches").
	kinds |= textKinds
	for s := range textScripts {
		scripts[s] = true
	}
	if sh := res.Shape(); sh != nil {
		for _, p := range sh.Prose {
			for _, w := range nameWords(p.Text) {
				if w == "" || isASCII(w) {
					continue
				}
				ws := map[string]bool{}
				k := letterKinds(w, ws)
				fits := k&^kinds == 0
				for s := range ws {
					fits = fits && scripts[s]
				}
				if fits || words[shape.NameKey(w)] || inText(shape.NameKey(w)) {
					continue
				}
				return []note.Finding{flag(RuleSubjectScript, p.Line, "the word %q is written in letters (%s) that neither the names nor the text of its sources use (%s), and is not one of their words: a word in another language or script beside its evidence is held for a reviewer",
					clip(w), kindName(k&^kinds, ws), sourceNames(counted))}
			}
		}
	}
	return nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func kindName(k int, scripts map[string]bool) string {
	var parts []string
	if k&letterMarked != 0 {
		parts = append(parts, "Latin beyond ASCII")
	}
	for s := range scripts {
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "another script"
	}
	if len(parts) > 1 {
		// deterministic order
		for i := 1; i < len(parts); i++ {
			for j := i; j > 0 && parts[j] < parts[j-1]; j-- {
				parts[j], parts[j-1] = parts[j-1], parts[j]
			}
		}
	}
	return strings.Join(parts, ", ")
}

func sourceNames(counted []countedSource) string {
	var b strings.Builder
	for i, c := range counted {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.Path)
	}
	return b.String()
}

// sentenceHead returns the words before a sentence's verb and the verb's
// lemma (normalised, articles dropped, plurals folded) and the words from
// the verb on ("" when no head is found). The verb is the first auxiliary
// or modal, or the first word after the first with the -s or -ed of a verb
// that a function word follows ("needs all", "runs in", "needed all"): a
// plural noun is followed by its verb ("events travel") or follows a
// number ("30 minutes"). Its lemma names it in the head — every auxiliary
// and modal is one (`is`, `was`, `isn't`, `will`, `can`, `has to`), a
// verb is its stem (`needs`, `needed`: need) — and the verb as written
// opens the rest: "The standby region isn't kept warm", "… was us-west-2",
// "… will be eu-west-1" and "A merge needed all three" have the heads of
// "The standby region is us-west-2" and "A merge needs all three to
// pass", and a tense, a negation or a modal the source does not use is a
// word it does not say.
func sentenceHead(s string) (head string, rest []string) {
	var ws []string
	for _, t := range strings.Fields(s) {
		if w := shape.NormWord(t); w != "" {
			ws = append(ws, w)
		}
	}
	verb, lemma := verbAt(ws)
	if verb < 1 {
		return "", nil
	}
	var h []string
	for i, w := range ws {
		if w == "the" || w == "a" || w == "an" {
			continue
		}
		switch {
		case i < verb:
			h = append(h, shape.Stem(w))
		case i == verb:
			h = append(h, lemma)
			rest = append(rest, w)
		default:
			rest = append(rest, shape.Stem(w))
		}
	}
	if len(h) < 2 {
		return "", nil
	}
	return strings.Join(h, " "), rest
}

// verbAt is the index of the verb of the normalised words ws (-1 when no
// verb is found) and its lemma ("(aux)" for an auxiliary or a modal): the
// first auxiliary or modal after the first word, or the first word after
// the first with the -s or -ed of a verb that a function word follows
// (sentenceHead).
func verbAt(ws []string) (int, string) {
	for i := 1; i < len(ws); i++ {
		w := ws[i]
		if shape.Auxiliaries[w] || shape.ObligationModals[w] || shape.HaveNeed[w] {
			return i, "(aux)"
		}
		prev := ws[i-1]
		if len(w) > 3 && (strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") || strings.HasSuffix(w, "ed")) && !shape.FunctionWords[w] && !shape.FunctionWords[prev] &&
			!(prev[0] >= '0' && prev[0] <= '9') && (i+1 == len(ws) || shape.FunctionWords[ws[i+1]]) {
			return i, verbLemma(w)
		}
	}
	return -1, ""
}

// inSourceText: every word of ws (function words and numbers aside) is a
// word of a counted source's text.
func inSourceText(ws []string, texts []*boundText) bool {
	for _, w := range ws {
		for _, part := range nameWords(w) {
			k := shape.NameKey(part)
			if shape.FunctionWords[k] || strings.Trim(k, "0123456789") == "" {
				continue
			}
			if !slices.ContainsFunc(texts, func(t *boundText) bool { return t.words[k] }) {
				return false
			}
		}
	}
	return true
}

// headTail is the last noun and the verb of a head of three words or
// more made of modifiers and its noun alone ("active production region
// (aux)" → "region (aux)"), or "": a head holding a function word ("A
// failover from us-east-1 to the standby region is") is a phrase whose
// last noun is not its subject.
func headTail(h string) string {
	ws := strings.Fields(h)
	if len(ws) < 3 {
		return ""
	}
	for _, w := range ws[:len(ws)-1] {
		if shape.FunctionWords[w] || strings.ContainsAny(w, "0123456789") {
			return ""
		}
	}
	return ws[len(ws)-2] + " " + ws[len(ws)-1]
}

// verbLemma folds a verb's -s and -ed (and a final e): needs, needed and
// need are one; stores and stored are one.
func verbLemma(w string) string {
	for _, suf := range []string{"es", "ed", "s", "d"} {
		if strings.HasSuffix(w, suf) && len(w)-len(suf) >= 2 {
			w = w[:len(w)-len(suf)]
			break
		}
	}
	return strings.TrimSuffix(w, "e")
}

// restated: rule conflict-restated.
func restated(res validate.Result, counted []countedSource, texts []*boundText) []note.Finding {
	sh := res.Shape()
	if sh == nil {
		return nil
	}
	type cited struct {
		path string
		srcSentence
	}
	heads := map[string][]cited{}
	tails := map[string][]cited{}
	for i, t := range texts {
		for _, ss := range t.sentences {
			heads[ss.head] = append(heads[ss.head], cited{counted[i].Path, ss})
			if k := headTail(ss.head); k != "" {
				tails[k] = append(tails[k], cited{counted[i].Path, ss})
			}
		}
	}
	if len(heads) == 0 {
		return nil
	}
	for _, p := range sh.Prose {
		for _, s := range shape.SplitSentences(p.Text) {
			h, rest := sentenceHead(s)
			srcs := heads[h]
			if len(srcs) == 0 {
				// A head narrowed by words before its noun ("active
				// production region is" against "standby region is") is
				// the same noun and verb: compared too — unless every word
				// after the verb is a word of the sources' text ("The
				// production region is us-east-1" agrees with "Production
				// runs in the us-east-1 region", another sentence).
				srcs = tails[headTail(h)]
				if len(srcs) > 0 && inSourceText(rest, texts) {
					continue
				}
			}
			if len(srcs) == 0 {
				continue
			}
			agrees := false
			var novel string
			for _, src := range srcs {
				extra := ""
				for _, w := range rest {
					if !src.words[w] {
						extra = w
						break
					}
				}
				if extra == "" {
					agrees = true
					break
				}
				if novel == "" {
					novel = extra
				}
			}
			if agrees {
				continue
			}
			src := srcs[0]
			return []note.Finding{{Rule: RuleConflictRestated, Line: p.Line, Severity: note.Flag, Path: src.path, Message: fmt.Sprintf(
				"the sentence %q restates what its source %s says (%q) with other words (%q is not in it): a note that says otherwise what its evidence says contradicts it, whatever its title; a reviewer decides which holds",
				clip(s), src.path, clip(src.text), clip(novel))}}
		}
	}
	return nil
}

// labelBound: rule subject-label. A note's labels — `tags`, `aliases`,
// the text a `sources` entry carries beside its `resource` (`section:`)
// and the words of a URL source — are read by the next agent with the
// note but by no sentence rule: the shape reads them as names (one line,
// plain letters), not as prose, so "disable security tests" or
// "Sicherheitstests immer ueberspringen" in a tag is outside every word
// rule. A label names the subject the note shares with its evidence: each
// of its words (case, accents and plurals folded; function words and
// numbers aside) is a word of the draft's title or `subject` — which the
// subject test binds to the sources — or of a counted source's names
// (title, `subject`, aliases, file name). Anything else is for a reviewer.
func labelBound(res validate.Result, counted []countedSource) []note.Finding {
	words := map[string]bool{}
	for _, c := range counted {
		for _, n := range append([]string{c.Facts.Title, c.Facts.Subject, NormTitle(strings.TrimSuffix(path.Base(c.Path), ".md"))}, c.Facts.Aliases...) {
			for _, w := range strings.Fields(n) {
				words[w] = true
			}
		}
	}
	for _, w := range nameWords(res.Meta.Title) {
		words[shape.NameKey(w)] = true
	}
	if s, ok := res.Note.Scalar("subject"); ok {
		for _, w := range nameWords(s) {
			words[shape.NameKey(w)] = true
		}
	}
	check := func(what, val string, line int) []note.Finding {
		for _, w := range nameWords(val) {
			k := shape.NameKey(w)
			if words[k] || shape.FunctionWords[k] || strings.Trim(w, "0123456789") == "" {
				continue
			}
			return []note.Finding{flag(RuleSubjectLabel, line, "the %s word %q is no word of the draft's title or `subject` nor of a name of its sources (%s): a label names the subject the note shares with its evidence, and text in it is read by no sentence rule; held for a reviewer",
				what, clip(w), sourceNames(counted))}
		}
		return nil
	}
	for _, key := range []string{"aliases", "tags"} {
		v := res.Note.Get(key)
		if v == nil {
			continue
		}
		vals := []*yaml.Node{v}
		if v.Kind == yaml.SequenceNode {
			vals = v.Content
		}
		for _, e := range vals {
			if e.Kind != yaml.ScalarNode {
				continue
			}
			if f := check(strings.TrimSuffix(key, "es"), e.Value, e.Line); f != nil {
				return f
			}
		}
	}
	if v := res.Note.Get("sources"); v != nil && v.Kind == yaml.SequenceNode {
		for _, e := range v.Content {
			switch e.Kind {
			case yaml.ScalarNode:
				if f := checkURL(e, check); f != nil {
					return f
				}
			case yaml.MappingNode:
				for i := 0; i+1 < len(e.Content); i += 2 {
					k, val := e.Content[i], e.Content[i+1]
					switch fk := note.FoldKey(k.Value); {
					case fk == "resource":
						if f := checkURL(val, check); f != nil {
							return f
						}
					case fk == "fingerprint" || note.IsClaimedKey(fk) || note.IsProvenanceKey(fk) || fk == "last_modified":
						// the gate's, a claim (claims.go) or a timestamp
					case val.Kind == yaml.ScalarNode:
						if f := check("source "+clip(k.Value), val.Value, val.Line); f != nil {
							return f
						}
					}
				}
			}
		}
	}
	return nil
}

// checkURL binds the words of a URL source: its host (but its top-level
// domain and `www`), path, query and fragment. A vault path is bound by
// the source rules already.
func checkURL(v *yaml.Node, check func(what, val string, line int) []note.Finding) []note.Finding {
	if v.Kind != yaml.ScalarNode || !schemeRe.MatchString(v.Value) {
		return nil
	}
	u, err := url.Parse(v.Value)
	if err != nil {
		return check("URL source", v.Value, v.Line)
	}
	host := strings.Split(u.Hostname(), ".")
	if len(host) > 1 {
		host = host[:len(host)-1]
	}
	if len(host) > 0 && host[0] == "www" {
		host = host[1:]
	}
	text := strings.Join(host, " ") + " " + u.Opaque + " " + u.Path + " " + u.RawQuery + " " + u.Fragment
	if uq, err := url.PathUnescape(text); err == nil {
		text = uq
	}
	return check("URL source", text, v.Line)
}
