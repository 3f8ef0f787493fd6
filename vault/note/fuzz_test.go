package note

import (
	"testing"
)

// FuzzFrontmatter: Parse and Check never panic, never take long, every
// finding names a rule and a line inside the input, and a note that parses
// renders to text that parses again.
func FuzzFrontmatter(f *testing.F) {
	for _, s := range []string{
		"---\ntype: Fact\n---\nbody\n",
		"---\na: &a [1]\nb: *a\n---\n",
		"---\ntype: !!str x\n---\n",
		"---\ntype: Fact\nverified:\n  - by: human:a\n    at: 2026-01-01\n---\n",
		"---\n---\n",
		"---\n{\n---\n",
		"\ufeff---\ntype: Fact\n---\n",
		"---\ntype: Fact\nStatus: stable\nstatus: draft\nVerified: [{by: human:alice}]\n---\n",
		"---\ntype: Fact\n\uff53\uff54\uff41\uff54\uff55\uff53: stable\n\u017ftatus: x\n---\n",
		"---\ntype: Fact\ntitle: \"\\x67hp_x\\u202E\\\n  y\"\n---\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, fs := Parse(b)
		lines := 1
		for _, c := range b {
			if c == '\n' {
				lines++
			}
		}
		check := func(fs []Finding) {
			for _, x := range fs {
				if x.Rule == "" || x.Line < 0 || x.Line > lines+1 || x.Message == "" {
					t.Fatalf("bad finding %+v for %q", x, b)
				}
			}
		}
		check(fs)
		if n == nil {
			if !HasErrors(fs) {
				t.Fatalf("nil note without an error finding: %q", b)
			}
			return
		}
		_, fs = Check(n)
		check(fs)
		out, err := Render(n.Front, n.Body)
		if err != nil {
			return // encoder limits are reported, not panicked
		}
		if n2, fs2 := Parse(out); n2 == nil && len(out) <= MaxFrontmatterBytes {
			t.Fatalf("rendered note does not parse: %v\nin:  %q\nout: %q", fs2, b, out)
		}
		// No timing assertion here (shared, noisy machines): a parse that
		// hangs is caught by the fuzzer's own per-input timeout and by
		// go test -timeout.
	})
}
