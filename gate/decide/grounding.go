package decide

// The claim grounded in its evidence (issue 24, red team round 4: the open
// draft rt4-passive-false-1). The subject test binds a draft's title to its
// sources, the restatement rule compares a sentence with a source sentence
// of the same head; a sentence with another head about what the source
// speaks of was bound to nothing: "The security stage of the CI test suite
// is disabled on the release branches", citing the note that says "The CI
// pipeline runs the unit, integration and security test suites on every
// pull request", promoted. The gate cannot tell it is false; it can tell
// that nothing its evidence says supports it.
//
// Rule evidence-grounding grants what the evidence supports instead of
// listing what it contradicts. A clause of the body is *about what its
// sources speak of* when more than half of the words of its subject (the
// words before its verb, sentenceHead's verb; function words and numbers
// aside) are words of a counted source — its text or its names — by the
// measure the subject test takes a title by (sources.go); a clause that
// opens by referring back ("It", "Its", "They") takes the previous one's
// subject. Such a clause promotes on its own only when
//
//   - its predicate (the words from its verb on) holds a word of its
//     sources, as written or by English word formation (a plural, a tense,
//     -ing, -ly, -ion, re-: "rerun" is grounded by "runs"), or gives a
//     measure of its subject (a figure, a duration, a frequency): it says
//     of the subject something in the terms its evidence uses, or how much;
//   - a figure of a unit a source gives a figure of ("35 days", "02:00
//     UTC", "600 requests per minute", "Go 1.26") is one the source gives
//     for that unit, or stands beside it (a range or a comparison: "from
//     02:00 to 03:30 UTC", "shorter than the 30 minutes");
//   - a frequency ("every 15 minutes", "nightly", "twice a year") is one
//     the source states, when the source states one;
//   - a negation (not, no, never, without, -n't…) is granted where a
//     source negates too: a claim that denies what its evidence asserts is
//     not supported by it.
//
// And in every clause an identifier of the form of one a source names
// ("eu-west-1" beside "us-east-1": letters, digits and hyphens in the same
// order) is one the source names.
//
// What is outside is held (a Flag) with a reason naming the words the
// sources do not have and the sources. A clause about something else than
// the sources' subject adds to it and is not judged here (the other-note
// rule, offsubject.go, binds a sentence about another note in force); a
// clause whose verb the grammar does not find is not judged either
// (docs/policy.md, Known gaps). The sets below are closed classes of
// English (negators, units of time, cardinals), not lists of bad words.

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"unicode"

	"github.com/fedmem/fedmem/gate/decide/shape"
	"github.com/fedmem/fedmem/gate/validate"
	"github.com/fedmem/fedmem/vault/note"
)

// RuleEvidenceGrounding: a clause about what its sources speak of that
// they do not support.
const RuleEvidenceGrounding = "evidence-grounding"

// groundSource is a counted source as the grounding rule reads it.
type groundSource struct {
	Path  string
	Body  string   // the body's text
	Names []string // title, `subject`, aliases, file name
}

func groundSources(counted []countedSource, texts []*boundText) []groundSource {
	out := make([]groundSource, 0, len(texts))
	for i, t := range texts {
		c := counted[i]
		names := append([]string{c.Facts.Title, c.Facts.Subject, NormTitle(strings.TrimSuffix(path.Base(c.Path), ".md"))}, c.Facts.Aliases...)
		out = append(out, groundSource{Path: c.Path, Body: t.body, Names: names})
	}
	return out
}

var (
	// negators are English's words of negation (a closed class).
	negators = shape.WordSet("not no never none nothing nobody nowhere neither nor without cannot")
	// cardinals are the numbers written out.
	cardinals = map[string]string{"one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7", "eight": "8", "nine": "9", "ten": "10",
		"eleven": "11", "twelve": "12", "fifteen": "15", "twenty": "20", "thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "ninety": "90", "hundred": "100", "thousand": "1000"}
	// timeUnits are the units of time and the days of the week, folded
	// (groundKey); timeAdverbs are their adverbs of frequency.
	timeUnits   = groundKeys("millisecond second minute hour day night week fortnight month quarter year weekday weekend monday tuesday wednesday thursday friday saturday sunday")
	timeAdverbs = map[string]string{"hourly": "hour", "daily": "day", "nightly": "night", "weekly": "week", "fortnightly": "fortnight", "monthly": "month", "quarterly": "quarter", "yearly": "year", "annually": "year"}
	// ordinals and fractions measure too ("less than a tenth of it").
	ordinals = shape.WordSet("first second third fourth fifth sixth seventh eighth ninth tenth twelfth twentieth hundredth half halves thirds quarters tenths percent dozen")
	// multiples count a frequency ("twice a year").
	multiples = map[string]string{"once": "1", "twice": "2", "thrice": "3"}
	// clauseBreaks join two clauses after a comma ("…, so the processor
	// never charges…").
	clauseBreaks = shape.WordSet("and but so or yet which while whereas")
)

// groundKey folds a word (NameKey) by English word formation: a plural, a
// tense, -ing, -ly, -ion, a final e, a doubled consonant, y for i ("retried",
// "retries" and "retry" are one; "nightly" is "night"; "rotation" and
// "rotated" are one).
func groundKey(w string) string {
	k := shape.NameKey(w)
	for _, suf := range []string{"ing", "ion", "ed", "es", "ly", "s", "d"} {
		if b, ok := strings.CutSuffix(k, suf); ok && len(b) >= 3 {
			k = b
			break
		}
	}
	if n := len(k); n >= 4 && k[n-1] == k[n-2] && !strings.ContainsRune("aeiouls", rune(k[n-1])) {
		k = k[:n-1] // stopped, running
	}
	if n := len(k); n > 3 && k[n-1] == 'e' {
		k = k[:n-1]
	}
	if n := len(k); n >= 3 && k[n-1] == 'i' {
		k = k[:n-1] + "y"
	}
	return k
}

func groundKeys(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[groundKey(w)] = true
	}
	return m
}

// gtoken is one word of a clause: as written (punctuation around it
// trimmed), normalised (shape.NormWord) and folded (groundKey).
type gtoken struct {
	raw, norm, key string
}

func isNumber(t gtoken) bool {
	return t.norm != "" && t.norm[0] >= '0' && t.norm[0] <= '9' && !strings.ContainsFunc(t.norm, unicode.IsLetter)
}

// number is t's value ("" when t is not a number): digits as written, a
// cardinal as digits.
func number(t gtoken) string {
	if isNumber(t) {
		return strings.TrimSuffix(t.norm, "%")
	}
	return cardinals[t.norm]
}

// contentWord: a word that says something (not a function word, a number
// or a single letter).
func contentWord(t gtoken) bool {
	return len(t.norm) > 1 && !shape.FunctionWords[t.norm] && number(t) == "" && strings.ContainsFunc(t.norm, unicode.IsLetter)
}

func negator(t gtoken) bool {
	return negators[t.norm] || strings.HasSuffix(t.norm, "n't") || shape.Auxiliaries[t.norm] && strings.HasSuffix(t.norm, "nt") && t.norm != "want"
}

// identifierForm is the form of an identifier — a token of letters and
// digits with a hyphen or an underscore ("us-east-1" is "a-a-9") — or "".
func identifierForm(t string) string {
	if !strings.ContainsAny(t, "-_") || !strings.ContainsFunc(t, unicode.IsLetter) || !strings.ContainsFunc(t, unicode.IsDigit) {
		return ""
	}
	var b strings.Builder
	last := rune(0)
	for _, r := range t {
		c := r
		switch {
		case unicode.IsLetter(r):
			c = 'a'
		case unicode.IsDigit(r):
			c = '9'
		}
		if c != last || c != 'a' && c != '9' {
			b.WriteRune(c)
		}
		last = c
	}
	return b.String()
}

func gtokens(s string) []gtoken {
	var out []gtoken
	for _, f := range strings.Fields(s) {
		n := shape.NormWord(f)
		if n == "" {
			continue
		}
		out = append(out, gtoken{raw: f, norm: n, key: groundKey(n)})
	}
	return out
}

// figure is a number and its unit ("35 day", "02:00 clock", "1.26 go"),
// the unit also as written (text).
type figure struct{ value, unit, text string }

// figures are the figures of a clause: a number and the word after it (and
// "per" and its word: "600 requests per minute"), or the word before it when
// a function word follows ("Go 1.26", "status 429"); a time of day is a
// clock time whatever follows.
func figures(ts []gtoken) []figure {
	var out []figure
	for i, t := range ts {
		v := number(t)
		if v == "" {
			continue
		}
		unit, text := "", ""
		switch {
		case strings.Contains(t.norm, ":"):
			unit, text = "(clock)", "a time of day"
		case i+1 < len(ts) && contentWord(ts[i+1]):
			unit, text = ts[i+1].key, ts[i+1].norm
			if i+3 < len(ts) && ts[i+2].norm == "per" && contentWord(ts[i+3]) {
				unit += " per " + ts[i+3].key
				text += " per " + ts[i+3].norm
			}
		case i > 0 && contentWord(ts[i-1]):
			unit, text = ts[i-1].key, ts[i-1].norm
		}
		if unit != "" {
			out = append(out, figure{v, unit, text})
		}
	}
	return out
}

// frequency is how often a clause says something happens: key compares
// ("1 night", "15 minut", "2/year"), text is the words as written.
type frequency struct{ key, text string }

// frequencies are the frequencies of a clause: "every [N] unit", "each
// unit", "N times a unit", "twice a year", an adverb of time ("nightly").
func frequencies(ts []gtoken) []frequency {
	var out []frequency
	words := func(i, j int) string {
		var ws []string
		for _, t := range ts[i : j+1] {
			ws = append(ws, t.norm)
		}
		return strings.Join(ws, " ")
	}
	for i, t := range ts {
		switch {
		case (t.norm == "every" || t.norm == "each") && i+1 < len(ts):
			n, j := "1", i+1
			if v := number(ts[j]); v != "" && j+1 < len(ts) {
				n, j = v, j+1
			}
			if timeUnits[ts[j].key] {
				out = append(out, frequency{n + " " + ts[j].key, words(i, j)})
			}
		case timeAdverbs[t.norm] != "":
			out = append(out, frequency{"1 " + groundKey(timeAdverbs[t.norm]), t.norm})
		case multiples[t.norm] != "" || number(t) != "" && i+1 < len(ts) && ts[i+1].norm == "times":
			n, j := multiples[t.norm], i+1
			if n == "" {
				n, j = number(t), i+2
			}
			if j+1 < len(ts) && (ts[j].norm == "a" || ts[j].norm == "an" || ts[j].norm == "per" || ts[j].norm == "every" || ts[j].norm == "each") && timeUnits[ts[j+1].key] {
				out = append(out, frequency{n + "/" + ts[j+1].key, words(i, j+1)})
			}
		}
	}
	return out
}

// hasMeasure: the words hold a figure, a number or a unit of time.
func hasMeasure(ts []gtoken) bool {
	return slices.ContainsFunc(ts, func(t gtoken) bool {
		return number(t) != "" || timeUnits[t.key] || timeAdverbs[t.norm] != "" || ordinals[t.norm] || multiples[t.norm] != ""
	})
}

// groundTruth is what the sources say, as the rule compares it.
type groundTruth struct {
	words   map[string]bool
	figures map[string][]sourced // unit → the values given
	freqs   []sourced
	// freqText are the frequencies as the sources write them (by freqs)
	freqText []string
	ids      map[string][]sourced // form → identifiers
	negates  bool
	paths    string
}

type sourced struct{ value, path, text string }

func learn(srcs []groundSource) *groundTruth {
	g := &groundTruth{words: map[string]bool{}, figures: map[string][]sourced{}, ids: map[string][]sourced{}}
	var paths []string
	for _, s := range srcs {
		paths = append(paths, s.Path)
		for _, n := range s.Names {
			for _, w := range nameWords(n) {
				g.words[groundKey(w)] = true
			}
		}
		for _, sent := range shape.SplitSentences(s.Body) {
			ts := gtokens(sent)
			for _, t := range ts {
				for _, w := range nameWords(t.norm) {
					g.words[groundKey(w)] = true
				}
				g.words[t.key] = true
				g.negates = g.negates || negator(t)
				if f := identifierForm(t.norm); f != "" {
					g.ids[f] = append(g.ids[f], sourced{t.norm, s.Path, sent})
				}
			}
			for _, f := range figures(ts) {
				g.figures[f.unit] = append(g.figures[f.unit], sourced{f.value, s.Path, sent})
			}
			for _, f := range frequencies(ts) {
				g.freqs = append(g.freqs, sourced{f.key, s.Path, sent})
				g.freqText = append(g.freqText, f.text)
			}
		}
	}
	g.paths = strings.Join(paths, ", ")
	return g
}

// knows: the word is a word of the sources, as written or formed ("rerun"
// from "run").
func (g *groundTruth) knows(t gtoken) bool {
	if g.words[t.key] {
		return true
	}
	for _, w := range nameWords(t.norm) {
		if !g.words[groundKey(w)] && !(strings.HasPrefix(w, "re") && len(w) > 4 && g.words[groundKey(w[2:])]) {
			return false
		}
	}
	return true
}

// clauses splits a sentence at a semicolon and at a comma that a clause
// word follows ("…, so the processor never charges…").
func clauses(s string) [][]gtoken {
	var out [][]gtoken
	for _, part := range strings.Split(s, ";") {
		ts := gtokens(part)
		start := 0
		for i := 1; i < len(ts); i++ {
			if strings.HasSuffix(ts[i-1].raw, ",") && clauseBreaks[ts[i].norm] {
				if start < i {
					out = append(out, ts[start:i])
				}
				start = i + 1 // the clause word is no word of either clause
			}
		}
		if start < len(ts) {
			out = append(out, ts[start:])
		}
	}
	return out
}

// grounded: rule evidence-grounding.
func grounded(res validate.Result, srcs []groundSource) []note.Finding {
	sh := res.Shape()
	if sh == nil || len(srcs) == 0 {
		return nil
	}
	g := learn(srcs)
	typ := res.Meta.Type
	if typ == "" {
		typ = "note"
	}
	n := 0
	for _, p := range sh.Prose {
		about := false // the previous clause was about the sources' subject
		prevSubject := ""
		for _, s := range shape.SplitSentences(p.Text) {
			for _, ts := range clauses(s) {
				if n++; n > maxBoundSentences {
					// past a shaped note's size; what the rule does not read
					// it does not grant
					return g.held(typ, p.Line, "", "the body has more than %d clauses, more than the rule reads", maxBoundSentences)
				}
				if len(ts) == 0 {
					continue
				}
				if f := g.identifiers(typ, ts, s, p.Line); f != nil {
					return f
				}
				ws := make([]string, len(ts))
				for i, t := range ts {
					ws[i] = t.norm
				}
				verb, lemma := verbAt(ws)
				if verb >= 1 && lemma != "(aux)" && strings.HasSuffix(s, ":") {
					// a lead-in ("The deployment region facts in short:")
					// whose verb is only the -s of a word: it names what
					// follows, which is judged
					about = false
					continue
				}
				// Without a verb the grammar finds ("The services build
				// with Go 1.22") the whole clause is its subject: its
				// figures, frequencies and negations are still compared.
				head := ts
				if verb >= 1 {
					head = ts[:verb]
				}
				var subj, known []string
				subject := prevSubject
				for _, t := range head {
					if contentWord(t) && !backReferences[t.norm] {
						subj = append(subj, t.norm)
						if g.knows(t) {
							known = append(known, t.norm)
						}
					}
				}
				switch {
				case len(subj) == 0 && backReferences[ts[0].norm]:
					// "It takes…": the previous clause's subject
				case len(subj) == 0:
					about = false
				default:
					about = 2*len(known) > len(subj)
					subject = strings.Join(subj, " ")
				}
				prevSubject = subject
				if !about {
					continue
				}
				if f := g.judge(typ, ts, verb, s, subject, p.Line); f != nil {
					return f
				}
			}
		}
	}
	return nil
}

func (g *groundTruth) held(typ string, line int, path, format string, args ...any) []note.Finding {
	return []note.Finding{{Rule: RuleEvidenceGrounding, Line: line, Severity: note.Flag, Path: path, Message: fmt.Sprintf(format, args...) +
		fmt.Sprintf(": a %s promotes on its own only with what its evidence supports; held for a reviewer", clip(typ))}}
}

// identifiers: an identifier of the form of one the sources name is one
// they name.
func (g *groundTruth) identifiers(typ string, ts []gtoken, s string, line int) []note.Finding {
	for _, t := range ts {
		f := identifierForm(t.norm)
		if f == "" || len(g.ids[f]) == 0 || slices.ContainsFunc(g.ids[f], func(x sourced) bool { return x.value == t.norm }) {
			continue
		}
		src := g.ids[f][0]
		return g.held(typ, line, src.path, "the sentence %q names %q where its source %s names %q (%q), an identifier of the same form", clip(s), clip(t.norm), src.path, src.value, clip(src.text))
	}
	return nil
}

// judge checks a clause about the sources' subject.
func (g *groundTruth) judge(typ string, ts []gtoken, verb int, s, subject string, line int) []note.Finding {
	var pred []gtoken
	if verb >= 1 {
		pred = ts[verb:]
	}
	var fresh []string
	grounded := verb < 1 // no verb found: no predicate to judge
	for _, t := range pred {
		if !contentWord(t) {
			continue
		}
		if g.knows(t) {
			grounded = true
			break
		}
		fresh = append(fresh, t.norm)
	}
	if !grounded && !hasMeasure(pred) {
		return g.held(typ, line, "", "the sentence %q is about what its sources speak of (%q) but says of it nothing they say: no word of its predicate (%s) is a word of %s, as written or by word formation, and it gives no measure",
			clip(s), subject, clip(strings.Join(fresh, ", ")), g.paths)
	}
	if !g.negates {
		for _, t := range ts {
			if negator(t) {
				return g.held(typ, line, "", "the sentence %q is about what its sources speak of (%q) and negates it (%q), where %s state no negation: a claim that denies what its evidence says is not supported by it",
					clip(s), subject, t.norm, g.paths)
			}
		}
	}
	beside := figures(gtokens(s)) // the sentence's figures
	for _, f := range figures(ts) {
		given := g.figures[f.unit]
		if len(given) == 0 {
			continue
		}
		ok := false
		for _, x := range given {
			// the source's figure, or a figure beside it in the sentence
			// (a range, a comparison)
			ok = ok || slices.ContainsFunc(beside, func(o figure) bool { return o.unit == f.unit && o.value == x.value })
		}
		if !ok {
			src := given[0]
			return g.held(typ, line, src.path, "the sentence %q gives %s (%s) where its source %s gives %s (%q): a figure its evidence fixes is granted as the evidence gives it",
				clip(s), f.value, f.text, src.path, src.value, clip(src.text))
		}
	}
	if len(g.freqs) > 0 {
		for _, f := range frequencies(ts) {
			if !slices.ContainsFunc(g.freqs, func(x sourced) bool { return x.value == f.key }) {
				src := g.freqs[0]
				return g.held(typ, line, src.path, "the sentence %q says how often %q where its source %s says %q (%q): a frequency its evidence states is granted as the evidence states it",
					clip(s), f.text, src.path, g.freqText[0], clip(src.text))
			}
		}
	}
	return nil
}
