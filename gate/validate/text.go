package validate

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/fedmem/fedmem/vault/note"
)

// maxPerRule bounds how many findings one rule reports for one draft, so a
// hostile draft cannot make a receipt of unbounded size.
const maxPerRule = 5

// limiter caps findings per rule and drops exact repeats (the same rule,
// line and message seen through two views of the same text, raw and
// decoded).
type limiter struct {
	n    map[string]int
	seen map[note.Finding]bool
}

func newLimiter() *limiter {
	return &limiter{n: map[string]int{}, seen: map[note.Finding]bool{}}
}

func (l *limiter) add(out []note.Finding, f note.Finding) []note.Finding {
	if l.seen[f] {
		return out
	}
	l.seen[f] = true
	l.n[f.Rule]++
	if l.n[f.Rule] > maxPerRule {
		return out
	}
	return append(out, f)
}

// invisible names the code points that render as nothing, reorder text or
// carry hidden data: bidirectional controls (Trojan Source, CVE-2021-42574),
// zero-width and other default-ignorable characters, soft hyphens, invisible
// math operators, Hangul fillers (render blank but count as letters, so they
// survive "strip whitespace"), variation selectors (a run of them after one
// emoji can encode arbitrary bytes), Unicode tag characters (hidden ASCII
// instructions to a language model), and every other format character.
func invisible(r rune) (string, bool) {
	switch {
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069, r == 0x200E, r == 0x200F, r == 0x061C:
		return "bidirectional control", true
	case r >= 0x200B && r <= 0x200D, r == 0x2060, r == 0x180E, r == 0xFEFF:
		return "zero-width character", true
	case r == 0x00AD:
		return "soft hyphen", true
	case r >= 0x2061 && r <= 0x2064:
		return "invisible math operator", true
	case r == 0x115F, r == 0x1160, r == 0x3164, r == 0xFFA0:
		return "Hangul filler", true
	case r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0100 && r <= 0xE01EF, r >= 0x180B && r <= 0x180D, r == 0x180F:
		return "variation selector", true
	case r >= 0xE0000 && r <= 0xE007F:
		return "Unicode tag character", true
	case r >= 0xFFF9 && r <= 0xFFFB:
		return "interlinear annotation character", true
	case r == 0x034F:
		return "combining grapheme joiner", true
	case r == 0x17B4, r == 0x17B5:
		return "invisible Khmer vowel", true
	case r == 0x2800:
		return "blank Braille pattern", true
	case r == 0x2028, r == 0x2029:
		return "line or paragraph separator", true
	case r >= 0x206A && r <= 0x206F:
		return "deprecated format character", true
	case r >= 0x80 && unicode.Is(unicode.Cf, r):
		return "format character", true
	}
	return "", false
}

// Invisible reports whether r is one of the invisible or reordering code
// points Text flags (out of context: a variation selector or zero-width
// joiner inside an emoji sequence is accepted by Text, not here), and names
// it.
func Invisible(r rune) (string, bool) { return invisible(r) }

// allowedInContext accepts the few invisible characters ordinary text needs:
// one emoji or text presentation selector (U+FE0E/U+FE0F) after a non-ASCII
// symbol or in a keycap sequence (digit, '#' or '*', selector, U+20E3), one ideographic variation selector after a Han character, and a
// zero-width joiner between emoji (family and profession sequences).
func allowedInContext(prev, r, next rune) bool {
	switch {
	case (r == 0xFE0E || r == 0xFE0F) && prev < 0x80:
		// After ASCII only in a keycap sequence ("1\uFE0F\u20E3"): a
		// selector between two digits splits a token for a secret scanner
		// ("AKIAZ4\uFE0FXYQW…") while rendering as nothing.
		return prev != 0 && next == 0x20E3 && (prev >= '0' && prev <= '9' || prev == '#' || prev == '*')
	case r == 0xFE0E || r == 0xFE0F:
		return prev != 0 && !isVS(prev) && !unicode.IsLetter(prev) && !unicode.IsSpace(prev) && !unicode.IsControl(prev)
	case r >= 0xE0100 && r <= 0xE01EF:
		return prev != 0 && unicode.Is(unicode.Han, prev)
	case r == 0x200D:
		return isEmojiish(prev) && isEmojiish(next)
	}
	return false
}

func isVS(r rune) bool { return r >= 0xFE00 && r <= 0xFE0F || r >= 0xE0100 && r <= 0xE01EF }

func isEmojiish(r rune) bool {
	return r == 0xFE0F || r >= 0x1F000 && r <= 0x1FAFF || (r >= 0x2600 && r <= 0x27BF) || (r >= 0x1F3FB && r <= 0x1F3FF)
}

// script classes for the mixed-script check.
const (
	scriptLatin = 1 << iota
	scriptCyrillic
	scriptGreek
)

func scriptOf(r rune) int {
	switch {
	case r < 0x80:
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return scriptLatin
		}
		return 0
	case unicode.Is(unicode.Latin, r):
		return scriptLatin
	case unicode.Is(unicode.Cyrillic, r):
		return scriptCyrillic
	case unicode.Is(unicode.Greek, r):
		return scriptGreek
	}
	return 0
}

// Text checks encoding and characters: invalid UTF-8 and control characters
// (other than tab, newline, carriage return) are errors; invisible Unicode
// and words that mix Latin, Cyrillic and Greek letters (look-alikes such as
// "pаypal" with a Cyrillic а) are flags.
func Text(b []byte) []note.Finding {
	return textScan(nil, newLimiter(), b, 1, false)
}

// textScan runs the character checks over b. Lines count from line; with
// fixed, every finding is reported on line (b is one decoded value).
func textScan(out []note.Finding, lim *limiter, b []byte, line int, fixed bool) []note.Finding {
	prev := rune(0)
	wordScripts, wordNonASCII := 0, false
	endWord := func() {
		if wordNonASCII && wordScripts&(wordScripts-1) != 0 {
			out = lim.add(out, note.Finding{Rule: "mixed-script", Line: line, Severity: note.Flag,
				Message: "a word mixes Latin, Cyrillic or Greek letters (look-alike characters); write it in one script"})
		}
		wordScripts, wordNonASCII = 0, false
	}
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if size < 1 {
			size = 1
		}
		if r >= 0x80 || unicode.IsLetter(r) {
			if unicode.IsLetter(r) || unicode.Is(unicode.Mn, r) {
				wordScripts |= scriptOf(r)
				wordNonASCII = wordNonASCII || r >= 0x80
			} else if _, inv := invisible(r); !inv {
				endWord()
			}
		} else {
			endWord()
		}
		switch {
		case r == utf8.RuneError && size <= 1:
			out = lim.add(out, note.Finding{Rule: "utf8", Line: line, Severity: note.Error,
				Message: fmt.Sprintf("invalid UTF-8 byte 0x%02x at offset %d; drafts must be UTF-8", b[i], i)})
		case r == '\n':
			if !fixed {
				line++
			}
		case r == '\t' || r == '\r':
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			out = lim.add(out, note.Finding{Rule: "control-char", Line: line, Severity: note.Error,
				Message: fmt.Sprintf("control character U+%04X is not allowed", r)})
		case r >= 0x80:
			if r == 0xFEFF && i == 0 && !fixed {
				break // a leading byte order mark
			}
			if what, bad := invisible(r); bad {
				next, _ := utf8.DecodeRune(b[i+size:])
				if !allowedInContext(prev, r, next) {
					out = lim.add(out, note.Finding{Rule: "invisible-unicode", Line: line, Severity: note.Flag,
						Message: fmt.Sprintf("%s U+%04X", what, r)})
				}
			}
		}
		prev = r
		i += size
	}
	endWord()
	return out
}

// Visible is s for a terminal: C0/C1 control characters (other than
// newline and tab), DEL, invalid UTF-8 and every invisible or reordering
// code point Invisible flags are shown as <U+XXXX>, so a draft, a path or a
// session id cannot hide text or drive the terminal.
func Visible(s string) string {
	var b strings.Builder
	for _, r := range s {
		_, inv := Invisible(r)
		switch {
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || inv || r == utf8.RuneError:
			fmt.Fprintf(&b, "<U+%04X>", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// OneLine is Visible with newlines and tabs shown as \n and \t, for a
// field that must stay on its line.
func OneLine(s string) string {
	return strings.NewReplacer("\n", `\n`, "\t", `\t`).Replace(Visible(s))
}
