package shape

// The mood of a shaped note's sentences (issue 24, the open red-team
// drafts). A Fact states what is. Two shapes of English say what someone is
// to do without an imperative, a "you" or an agent named, and both are
// grammar, not words:
//
//   - Deontic modality (rule shape-deontic): a modal of obligation (must,
//     should, shall, ought, needn't), a semi-modal of obligation ("is to be
//     ignored", "has to be", "needs to pass"), a permission qualified by an
//     adverb ("can safely be skipped"), and the evaluation of an action
//     whose doer is left out — the reader — ("failing checks are safe to
//     ignore", "it is fine to merge": a copula, a word, "to" and a verb with
//     nothing after it, or an expletive "it" before the copula).
//   - Steps in sentences (rule shape-steps, the rule numbered lists already
//     had): two or more clauses that are actions without a doer (passive:
//     "is switched off", "is then merged") placed in order in time (then,
//     next, again, before, after, until, once) are a procedure whatever its
//     layout; so is a clause opened by "then" after another action.
//
// The sets below are closed classes of English grammar (modals, copulas,
// sequence adverbs, temporal conjunctions), like the ones shape.go reads
// openings with, not lists of bad words.

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Shape rules of this file.
const (
	RuleDeontic = "shape-deontic" // a sentence of obligation or permission: what is to be done
)

var (
	// obligationModals: every use says what someone is to do.
	ObligationModals = WordSet("must mustn't mustnt should shouldn't shouldnt shall shan't ought oughtn't oughtnt needn't neednt")
	// possibilityModals: a permission when an adverb qualifies the act
	// ("can safely be ignored"); alone a fact ("can be restored").
	possibilityModals = WordSet("can cannot can't cant may might could")
	// copulas are the forms of "be" (and "get", which makes passives too).
	copulas = WordSet("is are was were be been being am isn't aren't wasn't weren't isnt arent wasnt werent get gets got gotten getting")
	// permissionModals make a statement a permission or a guess ("may be
	// skipped", "might be off"): a Fact states what is. ("can" stays a
	// fact of ability: "can be restored within 30 days".)
	permissionModals = WordSet("may might mightn't mightnt")
	// normativeAdjectives are the predicates of obligation and permission
	// after a copula, a closed class like the modals: "is optional", "isn't
	// required", "are not mandatory"; and "off", a setting ("is off on the
	// build hosts"): what is to be done or left undone, not what is.
	normativeAdjectives = WordSet("optional required mandatory compulsory obligatory necessary unnecessary needed unneeded allowed permitted forbidden prohibited exempt exempted waived advisory off")
	// haveNeed take "to" and a verb as an obligation ("has to pass").
	HaveNeed = WordSet("has have had having need needs needed")
	// expletives stand for a clause that follows ("it is safe to…").
	expletives = WordSet("it this that")
	// sequenceWords place an action after another.
	sequenceWords = WordSet("then next afterwards afterward subsequently thereafter finally firstly secondly lastly again")
	// temporalWords place an action in time relative to another.
	temporalWords = WordSet("before after until till once")
	// clauseLinks may follow a verb without being its object.
	clauseLinks = WordSet("and or but so when whenever while if unless before after until till once because since as where")
)

// verbLike: a word that may be a verb after "to": not a determiner, a
// pronoun, a number, a name or a preposition.
func verbLike(raw string) bool {
	w := NormWord(raw)
	if w == "" || objectWords[w] || prepositions[w] || openers[w] || FunctionWords[w] || nameLike(raw) {
		return false
	}
	r := w[0]
	return r >= 'a' && r <= 'z'
}

// participleLike: a word with the ending of a past participle ("switched",
// "merged", "taken", "driven"), not a function word ("then", "when").
func participleLike(raw string) bool {
	w := NormWord(raw)
	if len(w) < 4 || FunctionWords[w] || openers[w] || sequenceWords[w] {
		return false
	}
	return strings.HasSuffix(w, "ed") || strings.HasSuffix(w, "en") && !strings.HasSuffix(w, "een")
}

// gapAfter: nothing follows position i of ws that could be an object: the
// end, a preposition, a linking word or an adverb.
func gapAfter(ws []string, i int) bool {
	if i >= len(ws) {
		return true
	}
	w := ws[i]
	return prepositions[w] || clauseLinks[w] || sequenceWords[w] || strings.HasSuffix(w, "ly")
}

// deontic checks one sentence's words (normalised) for the mood of an
// instruction; toks are the raw tokens (for names).
func (c *shapeCheck) deontic(toks []string, s string, line int) {
	ws := make([]string, len(toks))
	for i, t := range toks {
		ws[i] = NormWord(t)
	}
	hold := func(why string) {
		c.add(RuleDeontic, line, "%q %s: a %s states what is, not what is to be done or may safely be done (that is a Workflow or Runbook, which a human reviews)", clip(s), why, c.sh.Type)
	}
	for i, w := range ws {
		switch {
		case ObligationModals[w]:
			hold("holds a modal of obligation (" + w + ")")
			return
		case copulas[w] && i+2 < len(ws) && ws[i+1] == "to" && (verbLike(toks[i+2]) || ws[i+2] == "be"):
			hold("says what is to be done (" + w + " to " + ws[i+2] + ")")
			return
		case HaveNeed[w] && i+2 < len(ws) && ws[i+1] == "to" && verbLike(toks[i+2]):
			hold("says what has to be done (" + w + " to " + ws[i+2] + ")")
			return
		case permissionModals[w] && (i > 0 || i+1 < len(toks) && !nameLike(toks[i+1])) && (i > 0 || toks[i] != "May"):
			// "May 2026" opening a sentence is a month
			hold("holds a modal of permission or possibility (" + w + ")")
			return
		case copulas[w] && normativeAfter(ws, i+1):
			hold("says what is required, optional or switched off (" + w + " … " + ws[normativeAt(ws, i+1)] + ")")
			return
		case possibilityModals[w] && i+3 < len(ws) && strings.HasSuffix(ws[i+1], "ly") && (copulas[ws[i+2]] || verbLike(toks[i+2])):
			hold("qualifies what may be done (" + w + " " + ws[i+1] + ")")
			return
		case copulas[w]:
			// copula, [adverb], word, "to", verb: the evaluation of an act
			// ("safe to ignore"); an act with an object after it is a fact
			// about the subject ("is set to 300", "is designed to absorb
			// bursts"), unless an expletive stands for it ("it is safe to
			// skip the suite").
			j := i + 1
			if j < len(ws) && (strings.HasSuffix(ws[j], "ly") || ws[j] == "not" || ws[j] == "always" || ws[j] == "never") {
				j++
			}
			if j+2 < len(ws) && ws[j+1] == "to" && !objectWords[ws[j]] && !prepositions[ws[j]] && verbLike(toks[j]) && verbLike(toks[j+2]) {
				if gapAfter(ws, j+3) || i > 0 && expletives[ws[i-1]] && (i == 1 || clauseLinks[ws[i-2]]) {
					hold("evaluates an act whose doer is the reader (" + ws[j] + " to " + ws[j+2] + ")")
					return
				}
			}
		}
	}
}

// normativeAt is the index of the predicate after a copula at j, past
// "not" and an adverb ("is not strictly required"), or -1.
func normativeAt(ws []string, j int) int {
	for k := 0; k < 2 && j < len(ws) && (ws[j] == "not" || ws[j] == "no" || ws[j] == "never" || strings.HasSuffix(ws[j], "ly") || ws[j] == "always" || ws[j] == "also" || ws[j] == "now"); k++ {
		j++
	}
	if j < len(ws) && normativeAdjectives[ws[j]] {
		return j
	}
	return -1
}

func normativeAfter(ws []string, j int) bool { return normativeAt(ws, j) >= 0 }

// steps counts the clauses of one sentence that are actions in order
// (c.stepClauses); Check holds the note when there are two or more.
func (c *shapeCheck) steps(toks []string, line int) {
	// Clauses: split at ';' and before "then" / "and then".
	var clauses [][]string
	start := 0
	for i, t := range toks {
		w := NormWord(t)
		cut := i > start && sequenceWords[w] && w == "then" && (strings.HasSuffix(toks[i-1], ",") || NormWord(toks[i-1]) == "and")
		if cut {
			end := i
			if NormWord(toks[i-1]) == "and" {
				end = i - 1
			}
			if end > start {
				clauses = append(clauses, toks[start:end])
			}
			start = i
		}
		if strings.HasSuffix(t, ";") {
			clauses = append(clauses, toks[start:i+1])
			start = i + 1
		}
	}
	if start < len(toks) {
		clauses = append(clauses, toks[start:])
	}
	for ci, cl := range clauses {
		passives, timed, thenVerb, coordinated := 0, false, false, false
		joined := false // an "and" or a comma since the last passive
		for i, t := range cl {
			w := NormWord(t)
			if sequenceWords[w] || temporalWords[w] {
				timed = true
			}
			if i == 0 && w == "then" && ci > 0 && len(cl) > 1 && verbLike(cl[1]) {
				thenVerb = true // ", then merges the branch"
			}
			if passives > 0 && (w == "and" || strings.HasSuffix(t, ",")) {
				joined = true
			}
			if copulas[w] {
				j := i + 1
				for j < len(cl) && j <= i+2 && (strings.HasSuffix(NormWord(cl[j]), "ly") || sequenceWords[NormWord(cl[j])] || NormWord(cl[j]) == "not") {
					j++
				}
				if j < len(cl) && participleLike(cl[j]) {
					// a second action without a doer joined to the first
					// ("… is switched off and the branch is merged"), not
					// one placed under it ("… are encrypted before they
					// are stored")
					coordinated = coordinated || passives > 0 && joined
					passives++
					joined = false
				}
			}
		}
		switch {
		case thenVerb:
			c.stepClauses += 2 // the action before "then" and the one after
		case passives > 0 && timed && coordinated:
			c.stepClauses += 2
		case passives > 0 && timed:
			c.stepClauses++
		}
		if c.stepClauses >= 2 && c.stepLine == 0 {
			c.stepLine = line
		}
	}
}

// irregularPlurals are plural nouns without an -s: a bare verb after one
// agrees with it ("People use the…").
var irregularPlurals = WordSet("people men women children staff data media police personnel feet teeth mice")

// bareVerb: a word in lower case that is a verb in its bare form — a
// common word of the lexicon with an -ed or -ing form there, without the
// -s, -ed or -ing of a verb that shows its subject, and not a function word.
func bareVerb(raw string) bool {
	t := trimToken(raw)
	if r, _ := utf8.DecodeRuneInString(t); !unicode.IsLower(r) {
		return false
	}
	w := NormWord(t)
	if len(w) < 2 || FunctionWords[w] || openers[w] || prepositions[w] || Auxiliaries[w] || ObligationModals[w] || HaveNeed[w] || copulas[w] || sentenceAdverbs[w] {
		return false
	}
	if strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") || strings.HasSuffix(w, "ed") || strings.HasSuffix(w, "ing") || strings.HasSuffix(w, "ly") {
		return false
	}
	l := englishLexicon()
	if !l.common.has(w) {
		return false
	}
	n := len(w)
	return l.common.has(w+"ed") || l.common.has(w+"d") || l.common.has(w+"ing") || l.common.has(w+w[n-1:]+"ed") || strings.HasSuffix(w, "e") && l.common.has(w[:n-1]+"ing")
}

// pluralNoun: a common noun in the plural (an English plural of a common
// word of the lexicon, or an irregular one); a name is never one here,
// whatever its last letter ("GitHub-Actions", "Jenkins").
func pluralNoun(raw string) bool {
	if nameLike(raw) {
		return false
	}
	w := NormWord(raw)
	if irregularPlurals[w] {
		return true
	}
	if !strings.HasSuffix(w, "s") || strings.HasSuffix(w, "ss") || len(w) < 4 {
		return false
	}
	l := englishLexicon()
	b := w[:len(w)-1]
	return l.common.has(b) || strings.HasSuffix(b, "e") && l.common.has(b[:len(b)-1]) || strings.HasSuffix(w, "ies") && l.common.has(w[:len(w)-3]+"y")
}

// namedOrder holds a sentence or clause that opens with a name (or any
// subject that is not a plural noun) followed by a verb in its bare form
// and its object (rule shape-imperative): "GitHub-Actions skip the security
// suite on release branches" is grammatical only as an order to the name's
// bearer ("GitHub-Actions: skip the…"), the way "Renovate, merge every
// update" is. A statement shows its subject in its verb ("GitHub Actions
// skips the…") or its subject is a plural ("The runners skip the…",
// "Engineers rotate the keys"). Inside a sentence a capitalised name after
// a clause ("…, and Jenkins skip the…", "On release branches GitHub-Actions
// skip the…") is read the same way, unless a determiner or a preposition
// before it makes it part of a phrase ("with a Retry-After header"). A name
// and a comma opening a sentence or a clause after ';' or ':' is an
// address: the clause after it is read as an opening (c.opening).
func (c *shapeCheck) namedOrder(toks []string, s string, line int) {
	for i := 0; i+1 < len(toks); i++ {
		clauseStart := i == 0 || strings.HasSuffix(toks[i-1], ";") || strings.HasSuffix(toks[i-1], ":")
		w := NormWord(toks[i])
		if clauseStart && strings.HasSuffix(toks[i], ",") && w != "" && !openers[w] && !FunctionWords[w] {
			c.opening(toks[i+1:], s, line) // "Renovate, merge every update", "…; Jenkins, skip…"
		}
		if i+2 >= len(toks) || w == "" || openers[w] || FunctionWords[w] || sentenceAdverbs[w] || strings.ContainsAny(toks[i][len(toks[i])-1:], ",:;") {
			continue
		}
		if i > 0 {
			r, _ := utf8.DecodeRuneInString(trimToken(toks[i]))
			prev := NormWord(toks[i-1])
			if !unicode.IsUpper(r) || objectWords[prev] || prepositions[prev] {
				continue // a name inside a phrase, or no name
			}
		}
		if strings.Trim(w, "0123456789.-/:%") == "" || !bareVerb(toks[i+1]) || pluralNoun(toks[i]) {
			continue
		}
		if !objectWords[NormWord(toks[i+2])] {
			if !clauseStart && !strings.HasSuffix(toks[i-1], ",") {
				continue // a name inside a noun phrase ("the full CI test suite")
			}
			// A name and a bare verb with a noun phrase and no determiner
			// ("Jenkins skip security checks on…"): the words after the
			// name are read as an order's opening is (bareOrder).
			if c.bareOrder(toks[i+1:], s, line) {
				return
			}
			continue
		}
		c.add(RuleImper, line, "%q holds a name and a verb in its bare form with its object (%s %s %s): an order to the name's bearer, not a statement about it; a %s's verb shows its subject (%ss) or its subject is a plural (the runners %s)",
			clip(s), trimToken(toks[i]), NormWord(toks[i+1]), NormWord(toks[i+2]), c.sh.Type, NormWord(toks[i+1]), NormWord(toks[i+1]))
		return
	}
}

// clauseConjunctions open a clause after a comma without being its subject
// or verb.
var clauseConjunctions = WordSet("and but so or yet nor then")

// commaImperatives open an instruction after a comma whatever follows.
var commaImperatives = WordSet("please kindly ensure remember don't dont let let's lets")

// commaOrder holds a sentence whose clause after a comma opens with a verb
// in its bare form and its object (rule shape-imperative, red team round
// 4): "On release branches, skip the security stage", "When a merge is
// urgent, disable the…", "The suite runs on every pull request, and skip
// the…", "…, so skip the…". A statement's clause after a comma opens with
// its subject ("On release branches, the runners skip…") or continues a
// list of nouns; a bare verb with an object there is the main clause of an
// order whose subject, the reader, is left out.
func (c *shapeCheck) commaOrder(toks []string, s string, line int) {
	for i := 0; i+1 < len(toks); i++ {
		if !strings.HasSuffix(toks[i], ",") {
			continue
		}
		j := i + 1
		for j+1 < len(toks) && (clauseConjunctions[NormWord(toks[j])] || sentenceAdverbs[NormWord(toks[j])] || strings.HasSuffix(NormWord(toks[j]), "ly") && !openers[NormWord(toks[j])]) {
			j++
		}
		w := NormWord(toks[j])
		if commaImperatives[w] || j+1 < len(toks) && bareVerb(toks[j]) && objectWords[NormWord(toks[j+1])] {
			c.add(RuleImper, line, "%q holds a clause after a comma that opens as an instruction (%s …): a statement's clause names its subject before its verb", clip(s), w)
			return
		}
		// A bare verb and a noun phrase without a determiner ("On release
		// branches, skip security checks of…"): the clause is read as a
		// sentence's opening is (bareOrder); a subject noun there ("After a
		// failover, traffic returns to…") is no bare verb.
		if j+1 < len(toks) && c.bareOrder(toks[j:], s, line) {
			return
		}
	}
}

// nameClauses holds a name (a title, a subject, an alias, a tag) whose
// part after ':', ';' or ',' opens as an instruction: a verb in its bare
// form ("CI test suite: skip security", "CI test suite, disable security"),
// with or without an object (red team, round 4). A name's parts are names.
func (c *shapeCheck) nameClauses(toks []string, text string, line int) {
	for i := 0; i+1 < len(toks); i++ {
		if !strings.HasSuffix(toks[i], ",") && !strings.HasSuffix(toks[i], ":") && !strings.HasSuffix(toks[i], ";") {
			continue
		}
		j := i + 1
		for j+1 < len(toks) && (clauseConjunctions[NormWord(toks[j])] || sentenceAdverbs[NormWord(toks[j])]) {
			j++
		}
		if w := NormWord(toks[j]); bareVerb(toks[j]) || imperativeOpeners[w] || commaImperatives[w] {
			c.add(RuleImper, line, "the name %q has a part that opens with a verb in its bare form (%s): an instruction, not a name", clip(text), w)
			return
		}
		c.opening(toks[j:], text, line)
	}
}

// numberWords are the cardinals written out.
var numberWords = WordSet("one two three four five six seven eight nine ten eleven twelve fifteen twenty thirty forty fifty sixty ninety hundred thousand million")

// bareOrder holds a sentence or clause that opens with a verb in its bare
// form and a noun phrase as its object, with no verb of its own after it
// (rule shape-imperative, red team round 4): "Skip security checks on the
// release branches", "Disable security scans on…", "Merge dependency
// updates before…". c.opening reads a verb and an object word ("Skip the…");
// an object without a determiner is a noun phrase, and a statement that
// opens with a noun (a bare verb's twin: "Release branches skip…",
// "Support tickets get…") has its verb after it. Here the words after the
// opening word up to a preposition, a linking word or the end are its
// object, and the clause holds no auxiliary, copula or modal and no word
// after that phrase with the -s of a verb: nothing is left to be the verb
// of a subject. (A noun subject followed by an -s verb and a preposition,
// "Traffic moves to…", is held too: the grammar here cannot tell "moves"
// from "checks"; a reviewer can.)
func (c *shapeCheck) bareOrder(toks []string, s string, line int) bool {
	if len(toks) < 2 {
		return false
	}
	first := trimToken(toks[0])
	if nameLike(first) || !bareVerb(strings.ToLower(first)) {
		return false
	}
	j := 1
	for j < len(toks) && j <= 4 {
		w := NormWord(toks[j])
		if w == "" || FunctionWords[w] || prepositions[w] || clauseLinks[w] || openers[w] || Auxiliaries[w] || copulas[w] || objectWords[w] || isDigit(w[0]) || strings.HasSuffix(w, "ly") {
			break
		}
		if pluralNoun(toks[j-1]) && bareVerb(toks[j]) {
			return false // a plural subject and its verb: "Order events travel through…"
		}
		j++
		if strings.ContainsAny(toks[j-1][len(toks[j-1])-1:], ",;:") {
			break
		}
	}
	if j == 1 || j > 4 {
		return false // a verb and a preposition is c.opening's; a long phrase is no object
	}
	if j < len(toks) {
		if w := NormWord(toks[j]); !(w != "" && (prepositions[w] || w == "of" || clauseLinks[w] || objectWords[w] || isDigit(w[0]) || strings.HasSuffix(w, "ly"))) {
			return false
		}
	}
	for k, t := range toks[1:] {
		w := NormWord(t)
		if Auxiliaries[w] || copulas[w] || ObligationModals[w] || possibilityModals[w] || HaveNeed[w] {
			return false
		}
		// A verb of the subject after a phrase ("Release notes for the
		// API list every change"): a bare verb after a word that is no
		// function word, before an object word, a number or the end.
		if i := k + 1; i > j && bareVerb(t) {
			prev := NormWord(toks[i-1])
			next := ""
			if i+1 < len(toks) {
				next = NormWord(toks[i+1])
			}
			if !FunctionWords[prev] && !prepositions[prev] && !openers[prev] && next != "" && (objectWords[next] || isDigit(next[0]) || numberWords[next]) {
				return false
			}
		}
	}
	c.add(RuleImper, line, "%q opens with a verb in its bare form and its object (%s %s) and has no verb of a subject after them: an instruction", clip(s), NormWord(toks[0]), clip(strings.Join(toks[1:j], " ")))
	return true
}
