package shape

// The words of a shaped note (issue 24, red team round 2: the open drafts
// rt2-lang-indonesian-1 and rt2-lang-latin-1). The English rules of the
// shape read grammar — function words, openings, moods — and a sentence
// that keeps English grammar around words of another language ("The tes
// keamanan of the CI test suite is nonaktif") passes every one of them:
// the words that carry its meaning are words the rules cannot judge. The
// shape names what it can judge instead of listing what it cannot:
//
// Rule shape-lexicon: every word of a shaped note's prose, title,
// `subject`, tags, aliases and source labels is a word the shape knows —
//
//   - a word of the shape's language: the English lexicon
//     (shapelexicon_en.txt, SCOWL's word lists as Debian ships them, and
//     shapelexicon_tech.txt, words of software operations SCOWL lacks), as
//     written or by English word formation from one (a plural, a tense,
//     -ity, -ness…; a prefix un-, re-, non-…; a compound of two words:
//     failover, hotfix, runbook);
//   - a name: a capitalised entry of the lexicon written capitalised, an
//     acronym of the lexicon written in capitals, a single letter (a word
//     of two letters is a word of the lexicon like any other: "is ab" is
//     German, round 4);
//   - or a word the vault already uses: a word of a counted source's text
//     or names (the evidence the draft is bound to), or a word of the name
//     (title, `subject`, aliases) of a note in force a human vouched for
//     (the conflict index; a note the gate promoted on its own names with
//     an agent's words and does not count).
//
// Anything else is a word the shape cannot judge, and the note waits for a
// reviewer (a Flag, like every shape rule). A missing entry in an allow-list
// holds a plain note; it never lets an instruction through.
//
// Cost: a few binary searches per word (wordSet); word formation only for a
// word not in the lexicon; the vault's words only for what is still unknown
// after that. The lexicon is read once per process, on the first shaped
// draft (about 5 ms and 1.5 MiB of heap for its 76k entries, most of them
// left in the embedded text: BenchmarkLexiconBuild).

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/fedmem/fedmem/gate/validate"
	"github.com/fedmem/fedmem/vault/note"
)

// RuleShapeLexicon: a word the shape's language does not know and the
// vault does not use.
const RuleLexicon = "shape-lexicon"

//go:embed shapelexicon_en.txt
var lexiconENText string

//go:embed shapelexicon_tech.txt
var lexiconTechText string

// lexicon is a language's words: common (lower case, any case matches) and
// names (matched only when written capitalised). Keys are lower case,
// accents dropped (NormWord's folding).
type lexicon struct {
	common, names wordSet
}

// wordSet is a set of keys, searched, not hashed: the lexicon is built
// once per process, on its first shaped draft, and every `fedmem gate
// once` is a process — 76k map inserts (and a NormWord and a string each)
// were 35–50 ms of its promotion. Most entries of a word list are written
// as their key (a–z), or as a name's key capitalised (A–Z then a–z), and
// the list is sorted by byte: those lines stay where they are in the
// embedded text, in runs that keep the list's order (an index of line
// offsets, no string and no pointer per entry); the others, a few
// thousand, are folded by NormWord and sorted.
type wordSet struct {
	runs []wordRun
	rest []string // sorted, no repeats
}

// wordRun is lines of a word list in its order, each its key as written
// or, fold, capitalised.
type wordRun struct {
	text   string
	starts []uint32 // where each line starts in text
	fold   bool
}

func (r *wordRun) entry(i int) string {
	e := r.text[r.starts[i]:]
	if j := strings.IndexByte(e, '\n'); j >= 0 {
		e = e[:j]
	}
	return e
}

// cmp compares the key k with entry e (its first letter lowered, fold).
func (r *wordRun) cmp(e, k string) int {
	if !r.fold || e == "" || k == "" {
		return strings.Compare(e, k)
	}
	if c := int(e[0]|0x20) - int(k[0]); c != 0 {
		return c
	}
	return strings.Compare(e[1:], k[1:])
}

func (r *wordRun) has(k string) bool {
	lo, hi := 0, len(r.starts)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		switch c := r.cmp(r.entry(m), k); {
		case c == 0:
			return true
		case c < 0:
			lo = m + 1
		default:
			hi = m
		}
	}
	return false
}

func (s *wordSet) has(k string) bool {
	for i := range s.runs {
		if s.runs[i].has(k) {
			return true
		}
	}
	_, ok := slices.BinarySearch(s.rest, k)
	return ok
}

// keys are every key of s, sorted (for tests).
func (s *wordSet) keys() []string {
	out := slices.Clone(s.rest)
	for _, r := range s.runs {
		for i := range r.starts {
			e := r.entry(i)
			if r.fold {
				e = strings.ToLower(e[:1]) + e[1:]
			}
			out = append(out, e)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// runBuilder collects one word list's lines into a run while they keep
// its order; a line out of order goes to the rest.
type runBuilder struct {
	run  wordRun
	last string
}

func (b *runBuilder) add(line string, at int, rest *[]string) {
	k := line
	if b.run.fold {
		k = string(line[0]|0x20) + line[1:]
	}
	if len(b.run.starts) > 0 && k <= b.last {
		*rest = append(*rest, k)
		return
	}
	b.run.starts = append(b.run.starts, uint32(at))
	b.last = k
}

var englishLexicon = sync.OnceValue(buildEnglishLexicon)

// buildEnglishLexicon reads the embedded word lists: a line starting with
// # is a comment; a word starting with an upper-case letter is a name.
func buildEnglishLexicon() *lexicon {
	var common, names wordSet
	for _, text := range []string{lexiconENText, lexiconTechText} {
		lower := runBuilder{run: wordRun{text: text}}
		capital := runBuilder{run: wordRun{text: text, fold: true}}
		at := 0
		for line := range strings.SplitSeq(text, "\n") {
			start := at
			at += len(line) + 1
			switch {
			case lowerASCII(line):
				lower.add(line, start, &common.rest) // one word, NormWord(line) == line
				continue
			case len(line) > 1 && line[0] >= 'A' && line[0] <= 'Z' && lowerASCII(line[1:]):
				capital.add(line, start, &names.rest) // a name: NormWord lowers its first letter
				continue
			case line == "" || line[0] == '#':
				continue
			}
			for w := range strings.FieldsSeq(line) {
				r, _ := utf8.DecodeRuneInString(w)
				k := NormWord(w)
				if unicode.IsUpper(r) {
					names.rest = append(names.rest, k)
				} else {
					common.rest = append(common.rest, k)
				}
			}
		}
		common.runs = append(common.runs, lower.run)
		names.runs = append(names.runs, capital.run)
	}
	for _, s := range []*wordSet{&common, &names} {
		slices.Sort(s.rest)
		s.rest = slices.Clip(slices.Compact(s.rest))
	}
	return &lexicon{common: common, names: names}
}

// lowerASCII: w is only the letters a to z (NormWord leaves it as it is).
func lowerASCII(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return w != ""
}

// UnknownWord is a word a shaped note uses that the lexicon does not know.
type UnknownWord struct {
	Word  string // as written
	Key   string // NameKey: how the vault's words are keyed
	Where string // body, title, subject, tag, alias, source label
	Line  int
}

// wordPrefixes and wordSuffixes are English word formation (closed sets).
var (
	wordPrefixes = []string{"un", "re", "non", "pre", "post", "sub", "multi", "auto", "co", "de", "over", "under", "inter", "cross", "micro", "mis", "self", "anti", "semi", "super", "out", "up"}
	wordSuffixes = []string{"abilities", "ability", "isation", "ization", "ingly", "ities", "ments", "ness", "ment", "less", "able", "ings", "ing", "ity", "ize", "ise", "ers", "est", "ful", "ism", "ist", "ed", "er", "ly", "al", "cy", "es", "s", "y"}
)

// known: w (lower case, accents folded) is a common word of the lexicon
// or formed from one by a suffix.
func (l *lexicon) known(w string) bool {
	if l.common.has(w) {
		return true
	}
	for _, suf := range wordSuffixes {
		b, ok := strings.CutSuffix(w, suf)
		if !ok || len(b) < 3 {
			continue
		}
		if suf == "es" && !(strings.HasSuffix(b, "s") || strings.HasSuffix(b, "x") || strings.HasSuffix(b, "z") || strings.HasSuffix(b, "ch") || strings.HasSuffix(b, "sh") || strings.HasSuffix(b, "o")) {
			continue // "probationes" is no English plural
		}
		if l.common.has(b) || l.common.has(b+"e") {
			return true
		}
		if n := len(b); n > 3 && b[n-1] == b[n-2] && l.common.has(b[:n-1]) {
			return true // stopped, running
		}
		if strings.HasSuffix(b, "i") && l.common.has(b[:len(b)-1]+"y") {
			return true // retried, replies
		}
		if suf == "cy" && l.common.has(b+"t") {
			return true // idempotency
		}
		if strings.HasPrefix(suf, "abilit") && (l.common.has(b+"able") || l.common.has(b+"e")) {
			return true
		}
	}
	return false
}

// formed: w is known, or a prefix and a known word, or a compound of two
// known words of three letters or more ("failover", "hotfixes").
func (l *lexicon) formed(w string) bool {
	if l.known(w) {
		return true
	}
	for _, p := range wordPrefixes {
		if rest, ok := strings.CutPrefix(w, p); ok && len(rest) >= 3 && l.known(rest) {
			return true
		}
	}
	if len(w) > 24 {
		return false
	}
	for i := 3; i+3 <= len(w); i++ {
		if l.common.has(w[:i]) && l.known(w[i:]) {
			return true
		}
	}
	return false
}

// knownPart: one run of letters of a word, as written, in running prose.
func (l *lexicon) knownPart(p string) bool { return l.knownPartAs(p, false) }

// knownPartAs: label is set for a run of a label (a tag, an alias, a
// subject, a source label) or of an identifier token (eu-west-1, ci_jobs):
// there a word of two letters may be a name of the lexicon written in lower
// case ("ci", "eu"); in running prose it is a common word ("is ab" is not).
func (l *lexicon) knownPartAs(p string, label bool) bool {
	n := utf8.RuneCountInString(p)
	if n <= 1 {
		return true
	}
	upper := !strings.ContainsFunc(p, unicode.IsLower)
	k := NormWord(p)
	if n == 2 && label && l.names.has(k) {
		return true
	}
	if upper && n <= 4 {
		// An acronym the lexicon lists (CI, API, HTTP, as a word or a
		// name: SCOWL has them) or one the vault uses. A run of two to
		// four capitals is not known for being short: "is AUS" and "is
		// ZU" are German words in capitals (red team, round 4).
		return l.common.has(k) || l.names.has(k)
	}
	r, _ := utf8.DecodeRuneInString(p)
	if l.formed(k) || unicode.IsUpper(r) && l.names.has(k) {
		return true
	}
	// A plural acronym (PRs, SDKs) of an acronym the lexicon lists.
	if b, ok := strings.CutSuffix(p, "s"); ok && !strings.ContainsFunc(b, unicode.IsLower) && utf8.RuneCountInString(b) <= 4 {
		return l.knownPartAs(b, label)
	}
	// Inner capitals: the parts (GitHub is Git and Hub, PostgreSQL is
	// Postgre and SQL) when the whole is no entry.
	if parts := camelParts(p); len(parts) > 1 {
		for _, q := range parts {
			if !l.knownPartAs(q, label) {
				return false
			}
		}
		return true
	}
	return false
}

// camelParts splits a word at its inner capitals: "GitHub" → Git, Hub;
// "PostgreSQL" → Postgre, SQL; "OAuth" → O, Auth.
func camelParts(p string) []string {
	rs := []rune(p)
	var out []string
	start := 0
	for i := 1; i < len(rs); i++ {
		lowerToUpper := unicode.IsLower(rs[i-1]) && unicode.IsUpper(rs[i])
		upperRun := unicode.IsUpper(rs[i-1]) && unicode.IsUpper(rs[i]) && i+1 < len(rs) && unicode.IsLower(rs[i+1])
		if lowerToUpper || upperRun {
			out = append(out, string(rs[start:i]))
			start = i
		}
	}
	return append(out, string(rs[start:]))
}

// unknownIn: a token of prose (punctuation around it trimmed) is known
// when each run of its letters is; it returns the first run that is not
// ("" when every run is known).
func (l *lexicon) unknownIn(tok string) string { return l.unknownAs(tok, false) }

// unknownAs is unknownIn for a token of a label (label set) or of prose.
func (l *lexicon) unknownAs(tok string, label bool) string {
	t := strings.ReplaceAll(trimToken(tok), "\u2019", "'")
	label = label || strings.ContainsAny(t, "-_./0123456789")
	t = strings.TrimSuffix(strings.TrimSuffix(t, "'s"), "'")
	for _, run := range strings.FieldsFunc(t, func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' && !unicode.Is(unicode.Mn, r) }) {
		run = strings.Trim(run, "'")
		if run == "" || l.knownPartAs(run, label) {
			continue
		}
		if strings.Contains(run, "'") {
			// a contraction the lexicon lacks: its parts
			ok := true
			for _, q := range strings.Split(run, "'") {
				ok = ok && l.knownPartAs(q, label)
			}
			if ok {
				continue
			}
		}
		return run
	}
	return ""
}

// maxUnknownWords bounds the words carried to the vault lookups: one is
// enough to hold a draft.
const maxUnknownWords = 16

// UnknownWords lists the words of res's prose, title, `subject`, tags,
// aliases and source labels that the English lexicon does not know
// (deduplicated by key, in order, at most maxUnknownWords).
func UnknownWords(res validate.Result) []UnknownWord {
	l := englishLexicon()
	var out []UnknownWord
	seen := map[string]bool{}
	scan := func(text, where string, line int) {
		for _, tok := range strings.Fields(text) {
			if len(out) >= maxUnknownWords {
				return
			}
			w := l.unknownAs(tok, where != "body" && where != "title")
			if w == "" {
				continue
			}
			k := NameKey(w)
			if seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, UnknownWord{Word: w, Key: k, Where: where, Line: line})
		}
	}
	n := res.Note
	if res.Meta.Title != "" {
		scan(res.Meta.Title, "title", n.KeyLine("title"))
	}
	for _, key := range [][2]string{{"subject", "subject"}, {"aliases", "alias"}, {"tags", "tag"}} {
		for _, e := range NameScalars(n.Get(key[0])) {
			scan(e.Value, key[1], e.Line)
		}
	}
	if v := n.Get("sources"); v != nil && v.Kind == yaml.SequenceNode {
		for _, e := range v.Content {
			if e.Kind != yaml.MappingNode {
				continue
			}
			for i := 0; i+1 < len(e.Content); i += 2 {
				k, val := e.Content[i], e.Content[i+1]
				switch fk := note.FoldKey(k.Value); {
				case fk == "resource" || fk == "fingerprint" || note.IsClaimedKey(fk) || note.IsProvenanceKey(fk) || fk == "last_modified":
				case val.Kind == yaml.ScalarNode:
					scan(val.Value, "source label", val.Line)
				}
			}
		}
	}
	if s := res.Shape(); s != nil {
		for _, p := range s.Prose {
			scan(p.Text, "body", p.Line)
		}
	}
	return out
}

// LexiconReasons holds a draft for the first word still unknown.
func LexiconReasons(typ string, ws []UnknownWord) []note.Finding {
	if len(ws) == 0 {
		return nil
	}
	w := ws[0]
	more := ""
	if len(ws) > 1 {
		more = fmt.Sprintf(" (and %d more)", len(ws)-1)
	}
	return []note.Finding{flag(RuleLexicon, w.Line, "outside the %s shape (auto_promote.shapes): the %s word %q%s is neither a word of the shape's language (en: the English lexicon and its word formation) nor a name the vault uses (its sources' words, the names of notes in force): a word the shape cannot judge, such as one of another language written in English letters; held for a reviewer",
		typ, w.Where, clip(w.Word), more)}
}
