// Package shape holds the content-shape rules of auto-promotion (issue 24):
// whether a validated note has the shape its type is given in the policy
// (auto_promote.shapes) — short declarative English prose in the allowed
// scripts, vault links only, no code, HTML, steps, orders or sentences
// addressed to a reader, and only words the English lexicon knows. Check
// and UnknownWords read the note alone (validate.Result) and return Flags;
// they read no vault, no origin and no clock, and write nothing. What the
// vault must answer — a link that names a note at HEAD, a word a source or
// a vouched note uses — the caller (gate/decide) answers through its
// HeadView.
//
// It also holds the word folding decide's evidence rules share with it
// (NameKey, FoldName, Stem, StripMarks, NormWord, SplitSentences and the
// closed word classes), so a word is one word to both.
package shape
