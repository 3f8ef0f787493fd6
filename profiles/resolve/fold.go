package resolve

import (
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"golang.org/x/term"
)

// DefaultWidth is the width explain's text is folded to when it is not
// written to a terminal (a pipe, a file, a CI log).
const DefaultWidth = 100

// minWidth bounds how narrow a terminal explain folds for: below it a
// line holds too little to read, and it is printed at this width.
const minWidth = 40

// OutputWidth is the width explain folds its text to on w: the terminal's
// columns when w is a terminal, else DefaultWidth.
func OutputWidth(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return DefaultWidth
	}
	cols, _, err := term.GetSize(int(f.Fd()))
	if err != nil || cols <= 0 {
		return DefaultWidth
	}
	return max(cols, minWidth)
}

// foldLines folds every line of text longer than width columns (runes)
// at spaces; a continuation line is indented four columns past its line's
// own indent, so a reader (and a script) can tell it continues the line
// above. A word longer than the room left (a long path) is cut after a
// '/' where it can be, else at the width. Nothing is dropped: the words
// are the same, in order.
func foldLines(text string, width int) string {
	var b strings.Builder
	lines := strings.SplitAfter(text, "\n")
	for _, l := range lines {
		nl := strings.HasSuffix(l, "\n")
		l = strings.TrimSuffix(l, "\n")
		for i, part := range foldLine(l, width) {
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(part)
		}
		if nl {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func foldLine(l string, width int) []string {
	if utf8.RuneCountInString(l) <= width {
		return []string{l}
	}
	lead := len(l) - len(strings.TrimLeft(l, " "))
	cont := strings.Repeat(" ", min(lead+4, width/2))
	var out []string
	cur := l[:lead]
	curLen := lead
	fresh := true // cur holds only its indent
	for _, t := range words(l[lead:]) {
		w := t.word
		for w != "" {
			wl := utf8.RuneCountInString(w)
			sep := len(t.sep)
			if fresh {
				sep = 0
			}
			if curLen+sep+wl <= width {
				if !fresh {
					cur += t.sep
				}
				cur += w
				curLen += sep + wl
				fresh = false
				break
			}
			if !fresh {
				out = append(out, cur)
				cur, curLen, fresh = cont, len(cont), true
				continue
			}
			// A word longer than a whole line: cut it.
			head, tail := cutWord(w, width-curLen)
			out = append(out, cur+head)
			cur, curLen, fresh = cont, len(cont), true
			w = tail
		}
	}
	if !fresh || len(out) == 0 {
		out = append(out, cur)
	}
	return out
}

// token is a word and the spaces before it, kept as written (aligned
// columns such as "owner   uid" stay aligned where they are not folded).
type token struct{ sep, word string }

func words(s string) []token {
	var out []token
	for s != "" {
		n := len(s) - len(strings.TrimLeft(s, " "))
		sep := s[:n]
		s = s[n:]
		if s == "" {
			break
		}
		end := strings.IndexByte(s, ' ')
		if end < 0 {
			end = len(s)
		}
		out = append(out, token{sep, s[:end]})
		s = s[end:]
	}
	return out
}

// cutWord splits w so that its head has at most room runes, after the last
// '/' or ',' in that room when there is one.
func cutWord(w string, room int) (string, string) {
	room = max(room, 1)
	n, at := 0, len(w)
	for i := range w {
		if n == room {
			at = i
			break
		}
		n++
	}
	if at >= len(w) {
		return w, ""
	}
	if k := strings.LastIndexAny(w[:at], "/,"); k > 0 {
		at = k + 1
	}
	return w[:at], w[at:]
}
