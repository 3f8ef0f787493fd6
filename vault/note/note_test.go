package note

import (
	"strings"
	"testing"
)

func TestParseRules(t *testing.T) {
	cases := []struct {
		name, in, rule string
		line           int
	}{
		{"no frontmatter", "hello\n", "frontmatter-open", 1},
		{"crlf open", "---\r\ntype: Fact\r\n---\r\n", "frontmatter-open", 1},
		{"unterminated", "---\ntype: Fact\nbody\n", "frontmatter-unterminated", 1},
		{"anchor", "---\na: &x 1\nb: 2\n---\n", "yaml-anchor", 2},
		{"alias bomb", "---\na: &a [x, x]\nb: [*a, *a]\n---\n", "yaml-anchor", 2},
		{"tag", "---\ntype: !!binary aGVsbG8=\n---\n", "yaml-tag", 2},
		{"custom tag", "---\ntype: Fact\nx: !secret y\n---\n", "yaml-tag", 3},
		{"dup key", "---\ntype: Fact\ntitle: a\ntitle: b\n---\n", "yaml-duplicate-key", 4},
		{"merge", "---\ntype: Fact\n<<: {a: 1}\n---\n", "yaml-merge", 3},
		{"depth", "---\na: [[[[[[[[[1]]]]]]]]]\n---\n", "yaml-depth", 2},
		{"not mapping", "---\n- a\n---\n", "frontmatter-not-mapping", 2},
		{"syntax", "---\ntype: Fact\n  bad: [\n---\n", "yaml-syntax", 0},
		{"bare cr", "---\ntype: Fact\ntitle: a\rb\n---\n", "frontmatter-linebreak", 3},
		{"line separator", "---\ntype: Fact\ntitle: a\u2028b\n---\n", "frontmatter-linebreak", 3},
		{"too big", "---\nx: " + strings.Repeat("a", MaxFrontmatterBytes) + "\n---\n", "frontmatter-size", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, fs := Parse([]byte(c.in))
			if n != nil {
				t.Fatalf("parsed; want rejection %s", c.rule)
			}
			if len(fs) == 0 || fs[0].Rule != c.rule || (c.line != 0 && fs[0].Line != c.line) {
				t.Fatalf("findings %v; want rule %s line %d", fs, c.rule, c.line)
			}
		})
	}
}

func TestParseKeepsAuthorText(t *testing.T) {
	in := "---\ntype: Fact\nflag: yes\nnum: 012\nwhen: 2026-09-09\n---\nbody\n"
	n, fs := Parse([]byte(in))
	if n == nil {
		t.Fatal(fs)
	}
	for k, want := range map[string]string{"flag": "yes", "num": "012", "when": "2026-09-09"} {
		if got, _ := n.Scalar(k); got != want {
			t.Errorf("%s = %q, want author text %q", k, got, want)
		}
	}
	if string(n.Body) != "body\n" || n.BodyLine != 7 {
		t.Errorf("body %q line %d", n.Body, n.BodyLine)
	}
	out, err := Render(n.Front, n.Body)
	if err != nil {
		t.Fatal(err)
	}
	n2, fs := Parse(out)
	if n2 == nil {
		t.Fatalf("re-parse of rendered note: %v\n%s", fs, out)
	}
	if got, _ := n2.Scalar("flag"); got != "yes" {
		t.Errorf("round trip changed flag to %q:\n%s", got, out)
	}
}

func TestCheckShape(t *testing.T) {
	cases := []struct{ name, in, rule string }{
		{"missing type", "---\ntitle: x\n---\n", "okf-type"},
		{"bad status", "---\ntype: Fact\nstatus: approved\n---\n", "okf-status"},
		{"bad confidence", "---\ntype: Fact\nconfidence: sure\n---\n", "okf-confidence"},
		{"bad risk", "---\ntype: Fact\nrisk: none\n---\n", "okf-risk"},
		{"no offset", "---\ntype: Fact\nstale_after: 2026-09-09T10:00:00\n---\n", "okf-timestamp"},
		{"verified not list", "---\ntype: Fact\nverified: {by: human:x}\n---\n", "okf-verified"},
		{"generated no by", "---\ntype: Fact\ngenerated: {at: 2026-01-01}\n---\n", "okf-generated"},
		{"source no resource", "---\ntype: Fact\nsources:\n  - author: human:a\n---\n", "okf-sources"},
		{"claimed", "---\ntype: Fact\nclaimed: {status: stable}\n---\n", "gate-owned"},
		{"odd key", "---\ntype: Fact\n\"a b\": 1\n---\n", "okf-key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, fs := Parse([]byte(c.in))
			if n == nil {
				t.Fatalf("parse: %v", fs)
			}
			_, fs = Check(n)
			for _, f := range fs {
				if f.Rule == c.rule && f.Severity == Error && f.Line > 0 {
					return
				}
			}
			t.Fatalf("findings %v; want %s", fs, c.rule)
		})
	}
}

func TestCheckNormalisesDates(t *testing.T) {
	n, fs := Parse([]byte("---\ntype: Fact\nconfidence: verified\nstale_after: 2026-12-09\nsources:\n  - resource: ../x.md\n    last_modified: 2026-09-08\n---\n"))
	if n == nil {
		t.Fatal(fs)
	}
	m, fs := Check(n)
	if HasErrors(fs) {
		t.Fatal(fs)
	}
	if got, _ := n.Scalar("stale_after"); got != "2026-12-09T00:00:00Z" {
		t.Errorf("stale_after = %q", got)
	}
	if m.Type != "Fact" || m.Confidence != "verified" || len(m.Sources) != 1 || m.Sources[0].Line != 6 {
		t.Errorf("meta %+v", m)
	}
}

func TestGateOwnedAnyCase(t *testing.T) {
	for _, k := range []string{"status", "Status", "STATUS", "Verified", "GENERATED", "Stale_After", "Confidence", "RISK", "Claimed", "\uff53\uff54\uff41\uff54\uff55\uff53", "\u017ftatus"} {
		if !IsGateOwned(k) {
			t.Errorf("%q not gate-owned", k)
		}
	}
	for _, k := range []string{"type", "title", "statuses", "sources"} {
		if IsGateOwned(k) {
			t.Errorf("%q gate-owned", k)
		}
	}
	n, fs := Parse([]byte("---\ntype: Fact\nstatus: draft\nStatus: stable\n---\n"))
	if n == nil {
		t.Fatal(fs)
	}
	if _, fs := Check(n); !HasErrors(fs) || fs[len(fs)-1].Rule != "okf-key-case" || fs[len(fs)-1].Line != 4 {
		t.Fatalf("keys equal under case folding: %v", fs)
	}
}
