package shape

import "strings"

// confusables folds the Cyrillic and Greek small letters that look like a
// Latin one to it (names are case folded first): "сi test suite" with a
// Cyrillic с is the name "ci test suite" to a reader.
var confusables = map[rune]rune{
	'а': 'a', 'в': 'b', 'е': 'e', 'ё': 'e', 'һ': 'h', 'і': 'i', 'ї': 'i', 'ј': 'j', 'к': 'k', 'м': 'm', 'н': 'h', 'о': 'o', 'р': 'p',
	'с': 'c', 'ѕ': 's', 'т': 't', 'у': 'y', 'х': 'x', 'ԁ': 'd', 'ԛ': 'q', 'ԝ': 'w', 'ӏ': 'l', 'ɡ': 'g', 'ı': 'i',
	'α': 'a', 'β': 'b', 'ε': 'e', 'η': 'n', 'ι': 'i', 'κ': 'k', 'ν': 'v', 'ο': 'o', 'ρ': 'p', 'τ': 't', 'υ': 'u', 'χ': 'x', 'ω': 'w',
}

// FoldConfusables folds w's Cyrillic and Greek look-alike small letters
// to the Latin ones (confusables); w as it is when it is all ASCII.
func FoldConfusables(w string) string {
	if !strings.ContainsFunc(w, func(r rune) bool { return r >= 0x80 }) {
		return w
	}
	return strings.Map(func(r rune) rune {
		if l, ok := confusables[r]; ok {
			return l
		}
		return r
	}, w)
}
