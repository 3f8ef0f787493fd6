package shape

import (
	"strings"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// foldName is case folding after NFKC, as names and words are compared
// (NormTitle, nameKey). Most of what the gate folds is ASCII, where NFKC
// is the identity and case folding is lower case: that path allocates no
// Caser (cases.Fold builds one per call) and walks no normaliser.
func foldName(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return cases.Fold().String(norm.NFKC.String(s))
		}
	}
	return strings.ToLower(s)
}
