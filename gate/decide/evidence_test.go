package decide

import (
	"testing"
)

func TestNormTitle(t *testing.T) {
	for _, c := range [][2]string{
		{"Deploy  Region", "deploy region"},
		{"\tＤｅｐｌｏｙ\u00a0region ", "deploy region"},
		{"STRASSE", "strasse"},
		{"Straße", "strasse"},
		{"ﬁle", "file"},
	} {
		if got := NormTitle(c[0]); got != c[1] {
			t.Errorf("NormTitle(%q) = %q, want %q", c[0], got, c[1])
		}
	}
}
