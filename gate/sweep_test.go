package gate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/gate/audit"
	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/durable"
	"github.com/fedmem/fedmem/gate/sweep"
)

func activeNote(title, staleAfter, sources string) string {
	return fmt.Sprintf("---\ntype: Fact\ntitle: %s\nstatus: stable\nverified:\n  - by: process:fedmem-gate\n    at: 2026-11-01T00:00:00Z\nstale_after: %s\n%s---\n%s holds.\n", title, staleAfter, sources, title)
}

// TestSweepWithholdsAndReverifyRestores: on a real vault, a note whose
// source changed and a note past stale_after are withheld, one gate commit
// each with an audit entry; a fresh note and a deprecated one are left
// alone; the repository stays valid and clean; reverify refuses while the
// source differs and restores once it matches again.
func TestSweepWithholdsAndReverifyRestores(t *testing.T) {
	v := newVault(t)
	humanCommit(t, v, map[string]string{"20-domains/src.md": "the region is eu-west-1\n"})
	fp := "git-blob:" + blobID(t, v, "20-domains/src.md")
	srcs := "sources:\n  - resource: 20-domains/src.md\n    fingerprint: " + fp + "\n  - resource: https://example.com/x\n"
	head0 := humanCommit(t, v, map[string]string{
		"20-domains/bound.md":      activeNote("Bound to its source", "2099-01-01T00:00:00Z", srcs),
		"20-domains/expired.md":    activeNote("Past its review date", "2026-11-01T00:00:00Z", ""),
		"20-domains/fresh.md":      activeNote("Still fresh", "2099-01-01T00:00:00Z", ""),
		"20-domains/deprecated.md": "---\ntype: Fact\nstatus: deprecated\nstale_after: 2020-01-01\n---\nold\n",
		"00-global/NOTE.md":        activeNote("Contract is never swept", "2020-01-01T00:00:00Z", ""),
	})
	g := openGate(t, v)

	s, err := g.Sweep()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Withheld) != 1 || s.Withheld[0].Path != "20-domains/expired.md" || s.Withheld[0].Reason != sweep.WithholdStale {
		t.Fatalf("first sweep: want only expired.md withheld as stale, got %+v", s)
	}
	// The source changes (a human push): bound.md must be withheld next.
	humanCommit(t, v, map[string]string{"20-domains/src.md": "the region is us-east-1\n"})
	s, err = g.Sweep()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Withheld) != 1 || s.Withheld[0].Path != "20-domains/bound.md" || s.Withheld[0].Reason != sweep.WithholdSourceChanged ||
		!strings.Contains(s.Withheld[0].Detail, "20-domains/src.md changed") {
		t.Fatalf("second sweep: want bound.md withheld for its source, got %+v", s)
	}
	if s.Checked != 2 { // bound.md and fresh.md were in force
		t.Errorf("checked %d notes in force, want 2", s.Checked)
	}
	checkRepo(t, v)
	for _, p := range []string{"20-domains/expired.md", "20-domains/bound.md"} {
		b, err := os.ReadFile(filepath.Join(v, p))
		if err != nil {
			t.Fatal(err)
		}
		f := decide.FactsOf(b)
		if f.InForce || f.Status != "draft" || !f.Withheld {
			t.Errorf("%s after the sweep: status %q withheld %v\n%s", p, f.Status, f.Withheld, b)
		}
		// One gate commit each, named in its trailer.
		log := gitCLI(t, v, "log", "--format=%an <%ae>%n%B", "-1", "--", p)
		if !strings.Contains(log, "fedmem-gate <gate@fedmem.invalid>") || !strings.Contains(log, "Fedmem-Withheld: "+p) {
			t.Errorf("last commit of %s is not the gate's withhold commit:\n%s", p, log)
		}
	}
	if n := strings.Count(gitCLI(t, v, "log", "--format=%s", head0+"..HEAD"), "fedmem: withhold"); n != 2 {
		t.Errorf("%d withhold commits, want 2", n)
	}
	for _, p := range []string{"20-domains/fresh.md", "20-domains/deprecated.md", "00-global/NOTE.md"} {
		if out := gitCLI(t, v, "log", "--format=%s", head0+"..HEAD", "--", p); out != "" {
			t.Errorf("%s was changed by the sweep: %s", p, out)
		}
	}
	// A third sweep finds nothing new.
	if s, err = g.Sweep(); err != nil || len(s.Withheld) != 0 {
		t.Fatalf("third sweep: %+v, %v", s, err)
	}

	// Reverify: the source still differs → refused, with the reason.
	r, err := g.Reverify("20-domains/bound.md", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if r.Restored || len(r.Failures) != 1 || !strings.Contains(r.Failures[0], "20-domains/src.md changed") {
		t.Fatalf("reverify with a changed source: %+v", r)
	}
	// The source is put back: reverify restores the note by a gate commit.
	humanCommit(t, v, map[string]string{"20-domains/src.md": "the region is eu-west-1\n"})
	if r, err = g.Reverify("/20-domains/bound.md", "alice"); err != nil || !r.Restored {
		t.Fatalf("reverify after the source came back: %+v, %v", r, err)
	}
	b, _ := os.ReadFile(filepath.Join(v, "20-domains/bound.md"))
	if f := decide.FactsOf(b); !f.InForce || f.Withheld || !strings.Contains(string(b), "by: human:alice") {
		t.Fatalf("restored note:\n%s", b)
	}
	// The stale note: sources (none) match, so it comes back with a new
	// review date from the policy's TTL.
	if r, err = g.Reverify("20-domains/expired.md", ""); err != nil || !r.Restored {
		t.Fatalf("reverify stale note: %+v, %v", r, err)
	}
	b, _ = os.ReadFile(filepath.Join(v, "20-domains/expired.md"))
	if f := decide.FactsOf(b); !f.InForce || !f.StaleAfter.After(fixedNow) {
		t.Fatalf("restored stale note keeps an old stale_after:\n%s", b)
	}
	// Not withheld / not a note / outside the swept folders.
	if _, err := g.Reverify("20-domains/fresh.md", "alice"); !errors.Is(err, sweep.ErrNotWithheld) {
		t.Errorf("reverify of a note in force: %v", err)
	}
	for _, bad := range []string{"../etc/passwd", "90-inbox/s/x.md", "00-global/NOTE.md", ".git/config"} {
		if _, err := g.Reverify(bad, "alice"); err == nil {
			t.Errorf("reverify %q: no error", bad)
		}
	}
	checkRepo(t, v)
	if s, err = g.Sweep(); err != nil || len(s.Withheld) != 0 {
		t.Fatalf("sweep after the restores: %+v, %v", s, err)
	}
	// Every withhold and restore is in the audit log, which verifies.
	raw, err := os.ReadFile(filepath.Join(g.StateDir(), "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if w, r := strings.Count(string(raw), `"kind":"withhold"`), strings.Count(string(raw), `"kind":"restore"`); w != 2 || r != 2 {
		t.Errorf("audit log: %d withhold and %d restore entries, want 2 and 2", w, r)
	}
	g.Close()
	if _, probs, err := audit.Verify(g.StateDir()); err != nil || len(probs) > 0 {
		t.Errorf("audit verify: %v %v", probs, err)
	}
}

// TestSweepFinishesAfterCrash: a gate killed between a withhold commit's
// ref update and its work tree leaves an intent; the next sweep checks the
// paths out so `git status` is clean again.
func TestSweepFinishesAfterCrash(t *testing.T) {
	v := newVault(t)
	humanCommit(t, v, map[string]string{"20-domains/old.md": activeNote("Old", "2020-01-01T00:00:00Z", "")})
	g := openGate(t, v)
	pol, err := g.Policy()
	if err != nil {
		t.Fatal(err)
	}
	branch, head, err := g.repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	old, _ := g.repo.FileAt(head, "20-domains/old.md")
	b, err := sweep.WithheldNote(old, fixedNow, sweep.WithholdStale, "test")
	if err != nil {
		t.Fatal(err)
	}
	// What commitLifecycle does, up to the ref update; then "killed".
	if err := durable.WriteJSON(g.statePath(sweep.IntentFile), sweep.Intent{Parent: head.String(), Paths: []string{"20-domains/old.md"}, Kind: "withhold", Note: "20-domains/old.md"}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.repo.CommitChanges(branch, head, []change{{Path: "20-domains/old.md", Content: b}}, g.signature(pol), "fedmem: withhold 20-domains/old.md (stale)\n"); err != nil {
		t.Fatal(err)
	}
	if st := gitCLI(t, v, "status", "--porcelain"); strings.TrimSpace(st) == "" {
		t.Fatal("the simulated crash should leave the work tree behind HEAD")
	}
	if _, err := g.Sweep(); err != nil {
		t.Fatal(err)
	}
	checkRepo(t, v)
	if _, err := os.Stat(g.statePath(sweep.IntentFile)); !os.IsNotExist(err) {
		t.Errorf("intent left behind: %v", err)
	}
}
