package resolve

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/fedmem/fedmem/profiles"
)

// TestExplainFitsWidth: explain's text fits the width it is given (the
// terminal's, else 100 columns): issue 23 found lines of 370 columns
// (credentials) and a mount table as wide as its longest path plus its
// longest reason. Every built-in profile, with a vault, workdir and home
// under long paths, at 100 and at 60 columns: no line is wider, and the
// folded text holds the same words in the same order as the unfolded one
// (nothing is cut off).
func TestExplainFitsWidth(t *testing.T) {
	long := filepath.Join(t.TempDir(), strings.Repeat("a-rather-long-folder-name/", 4))
	home, wd := filepath.Join(long, "home"), filepath.Join(long, "work")
	for _, d := range []string{home, wd} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", home)
	for _, name := range profiles.Builtins() {
		s, err := Resolve(Options{Profile: name, Placeholder: filepath.Join(long, "vault"), Workdir: wd, Session: "SESSION", Caller: true})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var wide bytes.Buffer
		if err := Explain(&wide, s, ExplainOptions{Layers: []string{"a layer whose description is long: " + strings.Repeat("word ", 60)}}); err != nil {
			t.Fatal(err)
		}
		for _, width := range []int{100, 60} {
			var out bytes.Buffer
			if err := Explain(&out, s, ExplainOptions{Width: width, Layers: []string{"a layer whose description is long: " + strings.Repeat("word ", 60)}}); err != nil {
				t.Fatal(err)
			}
			for i, l := range strings.Split(out.String(), "\n") {
				if n := utf8.RuneCountInString(l); n > width {
					t.Errorf("%s at %d columns: line %d has %d: %q", name, width, i+1, n, l)
				}
			}
			// The narrow table writes its columns on lines of their own
			// (and a source only when it is not the target): every word
			// of the unfolded text is still there.
			if w := missingWord(words2(out.String()), words2(wide.String())); w != "" {
				t.Errorf("%s at %d columns: the folded text lost %q", name, width, w)
			}
		}
	}
	if got := foldLines("owner   uid 0: short\n", 100); got != "owner   uid 0: short\n" {
		t.Errorf("a line that fits was changed: %q", got)
	}
	if got := foldLines("  key "+strings.Repeat("x", 30)+" tail\n", 20); got != "  key\n      xxxxxxxxxxxxxx\n      xxxxxxxxxxxxxx\n      xx tail\n" {
		t.Errorf("a long word is not cut under the continuation indent: %q", got)
	}
}

// words2 are the words of explain's text, without the table's layout words.
func words2(s string) []string {
	var out []string
	for _, w := range strings.Fields(s) {
		out = append(out, w)
	}
	return out
}

// missingWord returns a word of want that got does not hold (got read as
// one stream, so a word cut at the width is found whole), or "". The wide
// table's header names its columns, the narrow one's in lower case.
func missingWord(got, want []string) string {
	joined := strings.ToLower(strings.Join(got, ""))
	for _, w := range want {
		if !strings.Contains(joined, strings.ToLower(w)) {
			return w
		}
	}
	return ""
}
