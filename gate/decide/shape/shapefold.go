package shape

import (
	"strings"

	"go.yaml.in/yaml/v3"
	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// FoldName is case folding after NFKC, as names and words are compared
// (NameKey, the gate's NormTitle). Most of what the gate folds is ASCII, where NFKC
// is the identity and case folding is lower case: that path allocates no
// Caser (cases.Fold builds one per call) and walks no normaliser.
func FoldName(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return cases.Fold().String(norm.NFKC.String(s))
		}
	}
	return strings.ToLower(s)
}

// NameKey folds one name word as NormTitle does (NFKC, case folding,
// marks dropped, plural folded).
func NameKey(w string) string {
	return Stem(StripMarks(FoldName(w)))
}

// MaxAliases bounds the aliases of one note the conflict index holds.
const MaxAliases = 16

// NameScalars are the scalar entries among the first MaxAliases of a
// frontmatter value that is one name or a list of names (aliases, tags);
// nil for a missing value.
func NameScalars(v *yaml.Node) []*yaml.Node {
	if v == nil {
		return nil
	}
	vals := []*yaml.Node{v}
	if v.Kind == yaml.SequenceNode {
		vals = v.Content
	}
	var out []*yaml.Node
	for i, e := range vals {
		if i == MaxAliases {
			break
		}
		if e.Kind == yaml.ScalarNode {
			out = append(out, e)
		}
	}
	return out
}
