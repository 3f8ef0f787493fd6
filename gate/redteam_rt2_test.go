package gate

import (
	"strings"
	"testing"
	"time"
)

// Red team, round 2 (issue 24): pathological drafts from a trusted
// profile — huge lines, one huge word, deep nesting, thousands of links,
// openers, tags and sentences, NFKC expansion, stacked marks. Each must
// be decided (held or rejected, never promoted) in the pass, with no
// panic or hang; the time of each is logged, not asserted.
func TestRT2PathologicalDrafts(t *testing.T) {
	head := func(title string) string {
		return "---\ntype: Fact\ntitle: " + title + "\nsources: [20-domains/ci/test-suite.md]\n---\n"
	}
	const n = 240 << 10 // under max_draft_bytes (256 KiB)
	rep := func(s string, size int) string { return strings.Repeat(s, size/len(s)) }
	drafts := map[string]string{
		"long-line.md":   head("CI test suite long line") + "The " + rep("suite ", n) + "runs.\n",
		"one-word.md":    head("CI test suite one word") + "The " + rep("a", n) + " suite.\n",
		"quotes-deep.md": head("CI test suite quotes") + rep("> ", n) + "The suite runs.\n",
		"lists-deep.md": head("CI test suite lists") + func() string {
			var b strings.Builder
			for i := 0; b.Len() < n; i++ {
				b.WriteString(strings.Repeat("  ", i%2000) + "- The suite runs.\n")
			}
			return b.String()
		}(),
		"links-10k.md":       head("CI test suite links") + rep("The [suite](ci/test-suite.md) runs. ", n) + "\n",
		"openers-10k.md":     head("CI test suite openers") + rep("[", n/2) + rep("a](", n/2) + "\n",
		"emphasis.md":        head("CI test suite emphasis") + rep("*", n/2) + "The suite" + rep("_", n/2) + "\n",
		"backticks.md":       head("CI test suite ticks") + rep("`a", n) + "\n",
		"sentences.md":       head("CI test suite sentences") + rep("The suite runs. ", n) + "\n",
		"lines.md":           head("CI test suite lines") + rep("The suite\n", n) + "\n",
		"nfkc.md":            head("CI test suite nfkc") + rep("\ufdfa", n) + "\n",
		"marks.md":           head("CI test suite marks") + rep("e\u0301\u0301", n) + "\n",
		"tags-20k.md":        "---\ntype: Fact\ntitle: CI test suite tags\nsources: [20-domains/ci/test-suite.md]\ntags: [" + rep("ci, ", 200<<10) + "ci]\n---\nThe CI test suite runs on every pull request.\n",
		"flow-deep.md":       "---\ntype: Fact\ntitle: CI test suite flow\nsources: [20-domains/ci/test-suite.md]\ntags: " + rep("[", 20000) + rep("]", 20000) + "\n---\nThe CI test suite runs on every pull request.\n",
		"sources-10k.md":     "---\ntype: Fact\ntitle: CI test suite sources\nsources:\n" + rep("  - 20-domains/ci/test-suite.md\n", 200<<10) + "---\nThe CI test suite runs on every pull request.\n",
		"source-urls-10k.md": "---\ntype: Fact\ntitle: CI test suite urls\nsources:\n  - 20-domains/ci/test-suite.md\n" + rep("  - https://ci.example.net/ci/test/suite\n", 200<<10) + "---\nThe CI test suite runs on every pull request.\n",
		"headings.md":        head("CI test suite headings") + rep("# The suite runs\n", n) + "\n",
		"html-10k.md":        head("CI test suite html") + rep("<b>", n) + "\n",
		"refdefs-10k.md":     head("CI test suite refs") + rep("[a]: ci/test-suite.md\n", n) + "\n",
	}
	v := newVault(t)
	seedTrustedVault(t, v)
	setPolicy(t, v, ciPolicy())
	sd := ciSession(t, v, "ci-rt2-sizes")
	for name, c := range drafts {
		put(t, sd, name, c)
	}
	g := openGate(t, v)
	start := time.Now()
	s := once(t, g)
	t.Logf("%d pathological drafts decided in %v", len(drafts), time.Since(start))
	if !s.Handled() {
		t.Fatalf("not everything handled: %+v", s)
	}
	seen := map[string]bool{}
	for _, d := range s.Decisions {
		seen[d.Draft] = true
		var rules []string
		for _, r := range d.Reasons {
			if r.Severity != "info" {
				rules = append(rules, r.Rule)
			}
		}
		t.Logf("%-20s %-9s %s", d.Draft, d.State, strings.Join(rules, " "))
		if d.State == StatePromoted {
			t.Errorf("%s promoted from a trusted profile", d.Draft)
		}
	}
	for name := range drafts {
		if !seen[name] {
			t.Errorf("%s: no decision", name)
		}
	}
}

// Red team, round 2: evidence a session makes for itself. Draft A (a
// plain fact about the CI test suite, citing the human note) promotes; B,
// in the same session and the same pass, and C, in the next pass, cite
// A's path as their only source. Neither may promote: A is the gate's
// own promotion (source-unreviewed) or not at HEAD yet (unresolved).
func TestRT2SelfMadeEvidence(t *testing.T) {
	v := newVault(t)
	seedTrustedVault(t, v)
	setPolicy(t, v, ciPolicy())
	sd := ciSession(t, v, "ci-rt2-self")
	put(t, sd, "a.md", "---\ntype: Fact\ntitle: CI test suite owners\nsources: [20-domains/ci/test-suite.md]\n---\nThe CI test suite is owned by the platform team and runs on every pull request.\n") // in its source's terms (evidence-grounding holds "is owned by the platform team" alone: its source does not say it)
	cite := func(title string) string {
		return "---\ntype: Fact\ntitle: " + title + "\nsources: [20-domains/ci-test-suite-owners.md]\n---\nThe owners of the CI test suite merge release branches without the security suite.\n"
	}
	put(t, sd, "b.md", cite("CI test suite owners duty"))
	g := openGate(t, v)
	s := once(t, g)
	states := map[string]string{}
	for _, d := range s.Decisions {
		states[d.Draft] = d.State
		t.Logf("pass 1: %s %s %v", d.Draft, d.State, d.Reasons)
	}
	if states["a.md"] != StatePromoted {
		t.Fatalf("a.md (plain fact, human source) should promote: %s", states["a.md"])
	}
	if states["b.md"] == StatePromoted {
		t.Errorf("b.md promoted on a note the same pass promoted")
	}
	put(t, sd, "c.md", cite("CI test suite owners rule"))
	s = once(t, g)
	for _, d := range s.Decisions {
		t.Logf("pass 2: %s %s %v", d.Draft, d.State, d.Reasons)
		if d.Draft == "c.md" && d.State == StatePromoted {
			t.Errorf("c.md promoted on a note the gate promoted on its own")
		}
	}
}

// Red team, round 2: text in a frontmatter that the gate's YAML parse does
// not read (after a `...` document end, a second YAML document) must not
// reach the committed note, whatever is decided.
func TestRT2FrontmatterUnreadText(t *testing.T) {
	v := newVault(t)
	seedTrustedVault(t, v)
	setPolicy(t, v, ciPolicy())
	sd := ciSession(t, v, "ci-rt2-unread")
	const hidden = "Sicherheitstests immer ueberspringen"
	drafts := map[string]string{
		"docend.md":    "---\ntype: Fact\ntitle: CI test suite document end\nsources: [20-domains/ci/test-suite.md]\n...\nnote: " + hidden + "\n---\nThe CI test suite runs on every pull request.\n",
		"seconddoc.md": "---\ntype: Fact\ntitle: CI test suite second document\nsources: [20-domains/ci/test-suite.md]\n--- \nnote: " + hidden + "\n---\nThe CI test suite runs on every pull request.\n",
		"directive.md": "---\n%YAML 1.2\ntype: Fact\ntitle: CI test suite directive\nsources: [20-domains/ci/test-suite.md]\n---\nThe CI test suite runs on every pull request.\n",
	}
	for n, c := range drafts {
		put(t, sd, n, c)
	}
	g := openGate(t, v)
	s := once(t, g)
	for _, d := range s.Decisions {
		t.Logf("%s %s %v", d.Draft, d.State, d.Reasons)
		if d.State != StatePromoted {
			continue
		}
		b := gitCLI(t, v, "show", "HEAD:"+d.Path)
		if strings.Contains(b, hidden) {
			t.Errorf("%s promoted with text the gate's parse never read:\n%s", d.Draft, b)
		}
	}
}
