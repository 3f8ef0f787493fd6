package decide

import (
	"strings"
	"testing"
)

func TestLabelDefusesTitles(t *testing.T) {
	for in, want := range map[string]string{
		"ok title":                         "ok title",
		"x](javascript:alert(1)) [y":       "x javascript:alert 1 y",
		"a\u202eb\u200bc\nd\x1b":           "a b c d", // a space: dropping would join what they split
		"<img src=x onerror=alert(1)>":     "img src=x onerror=alert 1",
		strings.Repeat("é", 80):            strings.Repeat("é", 50),
		"# heading | table * em _ \\ ` !x": "heading table em x",
	} {
		if got := Label(in); got != want {
			t.Errorf("Label(%q) = %q, want %q", in, got, want)
		}
	}
}
