package decide

// A body about another subject than its evidence (issue 24, red team round
// 2: rt2-offbody-*). The subject test binds a draft's title to its cited
// sources and the restatement rule compares its sentences with the cited
// sources' sentences — nothing bound a sentence that is about neither:
// "CI test suite region", citing the CI note, saying "Production runs in
// the eu-west-1 region" beside 20-domains/infra/deployment-region.md.
//
// Rule subject-other-note: a body sentence of a draft with counted
// sources that shares no word with any counted source's names (title,
// `subject`, aliases, file name), that does not open by referring back
// ("It", "Its", "They"…: the previous sentence's subject), and that is
// about another note in force — one of that note's name words is in the
// sentence, and with it at least one more of the words of its names or
// body — holds the draft until that note is evidence too (a counted
// source: the subject test decides whether the draft is about both, and
// the restatement rule compares the sentence with it) or a reviewer
// decides. A note cited that does not count is no way around it.
// The sentence's words are folded as names are (shape.NameKey); function words
// and numbers are not words here. A note the gate promoted on its own
// (every `verified` entry a process's) is no other subject here: its
// subject is an agent's word too, and a rule that read it would hold
// drafts by what earlier drafts said.
//
// What it does not close: a sentence that borrows one word of the cited
// source's names ("Like the CI test suite, production runs in…"), or is
// about something no note in force names (docs/policy.md, Known gaps).
//
// Cost: the words index of the conflict index (conflictindex.go) gives the
// candidate notes; each candidate's body is read once per blob
// (boundText, cached).

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/fedmem/fedmem/gate/decide/shape"
	"github.com/fedmem/fedmem/gate/validate"
	"github.com/fedmem/fedmem/vault/note"
)

// RuleSubjectOtherNote: a body sentence about another note in force than
// the draft's evidence.
const RuleSubjectOtherNote = "subject-other-note"

// maxOtherNotes bounds the candidate notes read for one sentence.
const maxOtherNotes = 32

// backReferences open a sentence about the previous one's subject.
var backReferences = shape.WordSet("it its they their them this these those that such both")

func sentenceWordKeys(s string) []string {
	var out []string
	for _, w := range nameWords(s) {
		if k := shape.NameKey(w); !shape.FunctionWords[k] && strings.Trim(k, "0123456789") != "" && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

func offSubject(res validate.Result, counted []countedSource, hv *HeadView) ([]note.Finding, error) {
	sh := res.Shape()
	if sh == nil || hv == nil {
		return nil, nil
	}
	names := map[string]bool{}
	cited := map[string]bool{}
	for _, c := range counted {
		cited[c.Path] = true
		for _, n := range append([]string{c.Facts.Title, c.Facts.Subject, NormTitle(strings.TrimSuffix(path.Base(c.Path), ".md"))}, c.Facts.Aliases...) {
			for _, w := range nameWords(n) {
				names[shape.NameKey(w)] = true
			}
		}
	}
	n := 0
	for _, p := range sh.Prose {
		for _, s := range shape.SplitSentences(p.Text) {
			if n++; n > maxBoundSentences {
				// a shaped note is far shorter (max_bytes); past this the
				// draft waits for a reviewer anyway (shape-size)
				return nil, nil
			}
			toks := strings.Fields(s)
			if len(toks) == 0 || backReferences[shape.NormWord(toks[0])] {
				continue
			}
			ws := sentenceWordKeys(s)
			if slices.ContainsFunc(ws, func(w string) bool { return names[w] }) {
				continue
			}
			others, err := hv.nameWordNotes(ws, maxOtherNotes)
			if err != nil {
				return nil, err
			}
			ps := make([]string, 0, len(others))
			for op := range others {
				if !cited[op] {
					ps = append(ps, op)
				}
			}
			slices.Sort(ps)
			for _, op := range ps {
				f, err := hv.Facts(others[op])
				if err != nil {
					return nil, err
				}
				if f.GateMade {
					// the subject of a note the gate promoted on its own
					// is an agent's word, as the draft's is: the rule binds
					// sentences to the subjects people set
					continue
				}
				bt, err := hv.boundText(others[op])
				if err != nil {
					return nil, err
				}
				own := map[string]bool{}
				for _, n := range append([]string{f.Title, f.Subject, NormTitle(strings.TrimSuffix(path.Base(op), ".md"))}, f.Aliases...) {
					for _, w := range nameWords(n) {
						own[shape.NameKey(w)] = true
					}
				}
				var named, shared []string
				for _, w := range ws {
					switch {
					case own[w]:
						named = append(named, w)
					case bt.words[w]:
						shared = append(shared, w)
					}
				}
				if len(named) == 0 || len(named)+len(shared) < 2 {
					continue
				}
				return []note.Finding{{Rule: RuleSubjectOtherNote, Line: p.Line, Severity: note.Flag, Path: op, Message: fmt.Sprintf(
					"the sentence %q shares no word with the names of its sources (%s) and is about %s (%q of its name, %d word(s) of it in all): a sentence about another note in force cites that note, whose own rules then compare it; held for a reviewer",
					clip(s), sourceNames(counted), op, strings.Join(named, " "), len(named)+len(shared))}}, nil
			}
		}
	}
	return nil, nil
}
