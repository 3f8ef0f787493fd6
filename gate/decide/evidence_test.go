package decide

import (
	"testing"

	"github.com/fedmem/fedmem/gate/validate"
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

// The subject test on the titles make bench and the mechanics use.
func TestSourceSubject(t *testing.T) {
	f := func(title string) NoteFacts { return NoteFacts{Parsed: true, InForce: true, Title: NormTitle(title)} }
	for _, c := range []struct {
		draft, src, file string
		counts           bool
	}{
		{"Bench note 20261201T221500Z-3fa2b19c 12", "Bench note 0", "note-000000.md", true},
		{"Bench note promotion 3 of 100", "Bench note 0", "note-000000.md", true},
		{"Payments retry budget", "Payments retry policy", "retry-policy.md", true},
		{"Standby deployment region", "Deployment region", "deployment-region.md", true},
		{"Refund preference", "Payments retry policy", "retry-policy.md", false},
		{"Rotation lesson", "Secret rotation", "secret-rotation.md", false},
		{"Production region", "Browser support", "browser-support.md", false},
	} {
		res, err := validate.Draft([]byte("---\ntype: Fact\ntitle: " + c.draft + "\n---\nx\n"))
		if err != nil {
			t.Fatal(err)
		}
		rule, _ := sourceDiscount("20-domains/"+c.file, f(c.src), draftSubject(res))
		if (rule == "") != c.counts {
			t.Errorf("%q citing %q: rule %q, want counts=%v", c.draft, c.src, rule, c.counts)
		}
	}
}
