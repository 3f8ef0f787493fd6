package decide

// The content shape (gate/decide/shape) on a draft the gate judges: it is
// checked only for a draft from a trusted origin whose policy has
// auto_promote, and the parts that read the vault — vault links that must
// name a note at HEAD, words the vault already uses — read it here,
// through HeadView.

import (
	"path"
	"strings"

	"github.com/fedmem/fedmem/gate/decide/shape"
	"github.com/fedmem/fedmem/vault/note"
)

// shapeReasons holds a draft from a trusted origin whose content is outside
// its type's shape. Drafts that wait for a reviewer anyway (no auto_promote,
// an origin that is not trusted) are not checked: the shape only decides
// what may skip the reviewer.
func shapeReasons(in *Input, typ string) []note.Finding {
	ap := in.Policy.AutoPromote
	if ap == nil || !in.Origin.Verified || !in.Origin.Trusted || in.Result.Note == nil {
		return nil
	}
	sh := ap.ShapeFor(typ)
	if sh == nil {
		return []note.Finding{flag(shape.RuleType, in.Result.Meta.TypeLine,
			"type %q has no shape in auto_promote.shapes (shaped types: %s): a note of it promotes only with a reviewer, whatever its origin", clip(typ), strings.Join(ap.ShapeTypes(), ", "))}
	}
	return shape.Check(sh, in.Result)
}

// shapeLinks holds a shaped note whose vault link names no file at HEAD
// (rule shape-url): a dangling link's path is text in hyphens that no
// reader of the rendered note sees ("ci/skip-the-security-suite.md") and
// the next agent reads. Links resolve from the folder the note lands in,
// or from the vault root when they start with '/'. Like the shape, it
// only decides what may skip a reviewer.
func shapeLinks(in *Input, folder string, hv *HeadView) ([]note.Finding, error) {
	ap := in.Policy.AutoPromote
	if ap == nil || !in.Origin.Verified || !in.Origin.Trusted || in.Result.Note == nil || ap.ShapeFor(in.Result.Meta.Type) == nil {
		return nil, nil
	}
	s := in.Result.Shape()
	if s == nil {
		return nil, nil
	}
	for _, l := range s.VaultLinks {
		target := path.Join(folder, l.Detail)
		if strings.HasPrefix(l.Detail, "/") {
			target = path.Clean(strings.TrimLeft(l.Detail, "/"))
		}
		e, err := hv.Entry(target)
		if err != nil {
			return nil, err
		}
		if e == nil || !e.Mode.IsFile() {
			return []note.Finding{flag(shape.RuleURL, l.Line, "outside the %s shape (auto_promote.shapes): the link to %q names no note at HEAD (%s): a dangling link's path is text no reader of the rendered note sees; held for a reviewer", in.Result.Meta.Type, clip(l.Detail), target)}, nil
		}
	}
	return nil, nil
}

// shapeUnknownWords lists the words of a shaped note that the shape's
// lexicon does not know (deduplicated by key, in order): what
// lexiconReasons holds the draft for unless the vault uses them. Only for a
// draft shapeReasons checks, and only for a shape of language en.
func shapeUnknownWords(in *Input, typ string) []shape.UnknownWord {
	ap := in.Policy.AutoPromote
	if ap == nil || !in.Origin.Verified || !in.Origin.Trusted || in.Result.Note == nil {
		return nil
	}
	sh := ap.ShapeFor(typ)
	if sh == nil || sh.Language != "en" {
		return nil
	}
	return shape.UnknownWords(in.Result)
}

// vaultKnows drops from ws the words the vault uses: a word of a counted
// source's text or names, or a name word of a note in force that a human
// vouched for.
func vaultKnows(ws []shape.UnknownWord, counted []countedSource, hv *HeadView) ([]shape.UnknownWord, error) {
	if len(ws) == 0 {
		return nil, nil
	}
	names := map[string]bool{}
	var texts []*boundText
	for i, c := range counted {
		if i == maxBoundSources {
			break
		}
		for _, n := range append([]string{c.Facts.Title, c.Facts.Subject, NormTitle(strings.TrimSuffix(path.Base(c.Path), ".md"))}, c.Facts.Aliases...) {
			for _, w := range nameWords(n) {
				names[shape.NameKey(w)] = true
			}
		}
		if hv != nil {
			bt, err := hv.boundText(c.Blob)
			if err != nil {
				return nil, err
			}
			texts = append(texts, bt)
		}
	}
	var out []shape.UnknownWord
	for _, w := range ws {
		if names[w.Key] {
			continue
		}
		inText := false
		for _, t := range texts {
			inText = inText || t.words[w.Key]
		}
		if inText {
			continue
		}
		if hv != nil {
			vouched, err := hv.vouchedName(w.Key)
			if err != nil {
				return nil, err
			}
			if vouched {
				continue
			}
		}
		out = append(out, w)
	}
	return out, nil
}

// vouchedName: a note in force that a human vouched for (not one the gate
// promoted on its own) holds the word key k in its name.
func (hv *HeadView) vouchedName(k string) (bool, error) {
	notes, err := hv.nameWordNotes([]string{k}, 8)
	if err != nil {
		return false, err
	}
	for _, blob := range notes {
		f, err := hv.Facts(blob)
		if err != nil {
			return false, err
		}
		if f.InForce && !f.GateMade {
			return true, nil
		}
	}
	return false, nil
}
