package gate

// Issue 24 item 3 and issue 19 item 3: conflicts across the whole vault,
// withheld names reserved, supersession risk, and contradictions decided
// by the reviewer instead of a `-2.md` beside the note in force. Each test
// replays a finding through a real gate on a real vault and failed on the
// code before (the draft promoted, or the approval made a second note).

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/review"
	"github.com/fedmem/fedmem/vault/note"
)

const humanRegion = "---\ntype: Fact\ntitle: Deployment region\n---\nProduction runs in us-east-1.\n"

// inForceNamed lists the notes in force in the work tree whose title or
// subject normalises to name (a walk of the files, independent of the
// gate's index).
func inForceNamed(t *testing.T, v, name string) []string {
	t.Helper()
	var out []string
	k := decide.NormTitle(name)
	filepath.WalkDir(v, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(v, p)
		if e.IsDir() && (e.Name() == ".git" || rel == "90-inbox") {
			return filepath.SkipDir
		}
		if e.IsDir() || !strings.HasSuffix(p, ".md") || e.Name() == "index.md" || e.Name() == "log.md" {
			return nil
		}
		b, _ := os.ReadFile(p)
		f := decide.FactsOf(b)
		if f.InForce && (f.Title == k || f.Subject == k) {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}

// TestConflictInSubFolderHeld: a human note in a sub-folder
// (20-domains/infra/deployment-region.md, us-east-1) and a trusted draft
// with the same title saying eu-west-1 and citing the human note: the
// folder index saw the target folder's direct children only, so the draft
// promoted beside it. Same for a draft whose subject names it.
func TestConflictInSubFolderHeld(t *testing.T) {
	v := trustVault(t)
	humanCommit(t, v, map[string]string{"20-domains/infra/deployment-region.md": humanRegion})
	_, ds := rtDecide(t, v, map[string]string{
		"region.md":  "---\ntype: Fact\ntitle: Deployment region\nsources: [20-domains/infra/deployment-region.md]\n---\nProduction runs in eu-west-1.\n",
		"subject.md": "---\ntype: Fact\ntitle: Where production runs\nsubject: deployment REGION\nsources: [10-projects/src.md]\n---\nProduction runs in eu-west-1.\n",
		"deep.md":    "---\ntype: Fact\ntitle: Queue depth alarm\nsources: [10-projects/src.md]\n---\nAlarm at 10k messages.\n",
	})
	for _, n := range []string{"region.md", "subject.md"} {
		d := ds[n]
		rtHeldBy(t, n, d, decide.RuleConflict)
		if !strings.Contains(reasonText(d, decide.RuleConflict), "20-domains/infra/deployment-region.md") {
			t.Errorf("%s: the conflict should name the note in the sub-folder: %v", n, d.Reasons)
		}
	}
	if d := ds["deep.md"]; d.State != StatePromoted {
		t.Errorf("an unrelated note should still promote: %+v", d)
	}
	if got := inForceNamed(t, v, "Deployment region"); len(got) != 1 {
		t.Errorf("notes in force named Deployment region: %v", got)
	}
}

// TestWithheldNameReservedAndRestoreChecksConflicts: while a note is
// withheld its title could be promoted with any content, and reverify then
// restored the original beside it (two in force). Now the title stays
// reserved (the draft is held, rule conflict), and a reverify that would
// put a second note in force for the name fails, naming it.
func TestWithheldNameReservedAndRestoreChecksConflicts(t *testing.T) {
	v := trustVault(t)
	humanCommit(t, v, map[string]string{"20-domains/region-src.md": "---\ntype: Reference\ntitle: Region source\n---\nus-east-1\n"})
	g := openGate(t, v)
	sd := session(t, v, "w-1")
	put(t, sd, "a.md", "---\ntype: Fact\ntitle: Deploy region\nsources: [20-domains/region-src.md]\n---\nProduction runs in us-east-1.\n")
	a := decisionFor(t, once(t, g), "a.md")
	if a.State != StatePromoted {
		t.Fatalf("a: %+v", a)
	}
	humanCommit(t, v, map[string]string{"20-domains/region-src.md": "---\ntype: Reference\ntitle: Region source\n---\nchanged\n"})
	sw, err := g.Sweep()
	if err != nil || len(sw.Withheld) != 1 || sw.Withheld[0].Path != a.Path {
		t.Fatalf("sweep: %+v %v", sw, err)
	}
	put(t, sd, "b.md", "---\ntype: Fact\ntitle: Deploy Region\nsources: [10-projects/src.md]\n---\nProduction runs in eu-west-1.\n")
	b := decisionFor(t, once(t, g), "b.md")
	rtHeldBy(t, "b.md", b, decide.RuleConflict)
	if !strings.Contains(reasonText(b, decide.RuleConflict), "withheld") || !strings.Contains(reasonText(b, decide.RuleConflict), a.Path) {
		t.Errorf("the conflict should say the withheld note %s holds the name: %v", a.Path, b.Reasons)
	}
	// A human writes another note of that name while a is withheld; the
	// source comes back: reverify must not restore a beside it.
	humanCommit(t, v, map[string]string{
		"20-domains/ops/deploy-region.md": "---\ntype: Fact\ntitle: Deploy region\n---\nProduction runs in eu-central-1.\n",
		"20-domains/region-src.md":        "---\ntype: Reference\ntitle: Region source\n---\nus-east-1\n",
	})
	r, err := g.Reverify(a.ID, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if r.Restored || len(r.Failures) == 0 || !strings.Contains(strings.Join(r.Failures, "\n"), "20-domains/ops/deploy-region.md") {
		t.Fatalf("reverify restored a second note in force, or did not name the other: %+v", r)
	}
	if got := inForceNamed(t, v, "Deploy region"); len(got) != 1 {
		t.Errorf("notes in force named Deploy region: %v", got)
	}
	checkRepo(t, v)
}

// TestSupersedingHumanOrRiskyNoteHeld: a trusted Fact whose `supersedes`
// names a deprecated, human-approved Runbook in 40-workflows/ promoted
// without review and rewrote the Runbook's superseded_by. The note retired
// is what counts: a human's note, or one whose type and folder are not low
// risk, is superseded only by a reviewer.
func TestSupersedingHumanOrRiskyNoteHeld(t *testing.T) {
	v := trustVault(t)
	runbook := "---\ntype: Runbook\ntitle: Restart the payment workers\nstatus: deprecated\nverified:\n  - by: human:alice\n    at: 2026-01-01T00:00:00Z\n---\n1. Drain the queue.\n"
	humanCommit(t, v, map[string]string{
		"40-workflows/restart-payments.md": runbook,
		"20-domains/old-limits.md":         "---\ntype: Fact\ntitle: Old limits\nstatus: deprecated\n---\n10 rps.\n",
	})
	_, ds := rtDecide(t, v, map[string]string{
		"hijack.md": "---\ntype: Fact\ntitle: Payment workers restart\nsupersedes: [40-workflows/restart-payments.md]\nsources: [10-projects/src.md]\n---\nThe workers restart on their own.\n",
		"human.md":  "---\ntype: Fact\ntitle: New limits\nsupersedes: [20-domains/old-limits.md]\nsources: [10-projects/src.md]\n---\n20 rps.\n",
	})
	h := ds["hijack.md"]
	rtHeldBy(t, "hijack.md", h, decide.RuleSupersedesReviewed)
	rtHeldBy(t, "hijack.md", h, decide.RuleSupersedesRisk)
	rtHeldBy(t, "human.md", ds["human.md"], decide.RuleSupersedesReviewed)
	b, err := os.ReadFile(filepath.Join(v, "40-workflows/restart-payments.md"))
	if err != nil || string(b) != runbook {
		t.Errorf("the Runbook was rewritten: %v\n%s", err, b)
	}
}

// TestApproveContradictionIsDecided (issue 19 item 3): approving a held
// draft that contradicts a note in force made `…-2.md` beside it, two
// notes titled "Deployment region" in force. Now an approval without a
// choice fails naming the note; --supersede deprecates it in the same
// commit; --title promotes under another title; exactly one note in force
// for the name at the end.
func TestApproveContradictionIsDecided(t *testing.T) {
	v := trustVault(t)
	humanCommit(t, v, map[string]string{"20-domains/deployment-region.md": humanRegion})
	g := openGate(t, v)
	sd := session(t, v, "c-1")
	put(t, sd, "eu.md", "---\ntype: Fact\ntitle: Deployment region\nsources: [10-projects/src.md]\n---\nProduction runs in eu-west-1.\n")
	put(t, sd, "staging.md", "---\ntype: Fact\ntitle: Deployment REGION\nsources: [10-projects/src.md]\n---\nStaging runs in eu-west-2.\n")
	s := once(t, g)
	eu, st := decisionFor(t, s, "eu.md"), decisionFor(t, s, "staging.md")
	rtHeldBy(t, "eu.md", eu, decide.RuleConflict)
	rtHeldBy(t, "staging.md", st, decide.RuleConflict)
	head := gitCLI(t, v, "rev-parse", "HEAD")

	_, err := g.Approve(eu.ID, "alice")
	if !errors.Is(err, decide.ErrContradiction) {
		t.Fatalf("approval of a contradicting draft: %v, want ErrContradiction", err)
	}
	for _, want := range []string{"20-domains/deployment-region.md", "--supersede", "--title", "reject"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error should name %q: %v", want, err)
		}
	}
	if gitCLI(t, v, "rev-parse", "HEAD") != head {
		t.Fatal("a failed approval committed")
	}
	if p, _ := g.Pending(); len(p) != 2 {
		t.Fatalf("a failed approval decided the draft: %d pending", len(p))
	}
	if _, err := g.ApproveWith(eu.ID, "alice", review.ApproveOptions{Supersede: true, Title: "x"}); err == nil || !strings.Contains(err.Error(), "choose one") {
		t.Fatalf("--supersede with --title: %v", err)
	}
	for _, bad := range []string{"   ", "a\x01b", "!!!", strings.Repeat("x", 201)} {
		if _, err := g.ApproveWith(eu.ID, "alice", review.ApproveOptions{Title: bad}); err == nil || !strings.Contains(err.Error(), "not usable") {
			t.Errorf("retitle to %q: %v", bad, err)
		}
	}
	if p, _ := g.Pending(); len(p) != 2 {
		t.Fatalf("a refused choice decided the draft: %d pending", len(p))
	}

	d, err := g.ApproveWith(eu.ID, "alice", review.ApproveOptions{Supersede: true})
	if err != nil || d.State != StatePromoted {
		t.Fatalf("approve --supersede: %+v %v", d, err)
	}
	old, _ := os.ReadFile(filepath.Join(v, "20-domains/deployment-region.md"))
	of := decide.FactsOf(old)
	if of.Status != note.StatusDeprecated || !strings.Contains(string(old), "superseded_by: "+d.Path) {
		t.Errorf("the note in force was not deprecated and pointed at %s:\n%s", d.Path, old)
	}
	changed := gitCLI(t, v, "show", "--name-only", "--format=", "HEAD")
	for _, p := range []string{d.Path, "20-domains/deployment-region.md"} {
		if !strings.Contains(changed, p+"\n") {
			t.Errorf("the promotion commit should change %s too:\n%s", p, changed)
		}
	}
	newNote, _ := os.ReadFile(filepath.Join(v, d.Path))
	if !strings.Contains(string(newNote), "20-domains/deployment-region.md") || !strings.Contains(string(newNote), "eu-west-1") {
		t.Errorf("the new note should name what it supersedes:\n%s", newNote)
	}
	if got := inForceNamed(t, v, "Deployment region"); len(got) != 1 || got[0] != d.Path {
		t.Errorf("notes in force named Deployment region: %v, want only %s", got, d.Path)
	}

	// The second one now contradicts the new note: retitled, it promotes
	// beside it without contradiction.
	if _, err := g.Approve(st.ID, "alice"); !errors.Is(err, decide.ErrContradiction) || !strings.Contains(err.Error(), d.Path) {
		t.Fatalf("second approval: %v", err)
	}
	d2, err := g.ApproveWith(st.ID, "alice", review.ApproveOptions{Title: "Staging deployment region"})
	if err != nil || d2.State != StatePromoted || !strings.Contains(d2.Path, "staging-deployment-region") {
		t.Fatalf("approve --title: %+v %v", d2, err)
	}
	if got := inForceNamed(t, v, "Deployment region"); len(got) != 1 {
		t.Errorf("after the retitle: %v", got)
	}
	if got := inForceNamed(t, v, "Staging deployment region"); len(got) != 1 {
		t.Errorf("retitled note: %v", got)
	}
	checkRepo(t, v)
}

// TestSupersedingNoteNotWithheldForItsSource: a reviewer approves, with
// --supersede, a draft that cites the human note it contradicts (the
// e2e TestTwoUsersContradictionDecided's draft). The promotion commit
// deprecates that note, so its blob changes: the next sweep saw "source
// changed" and withheld the note the human had just approved (the e2e
// test failed when a sweep tick fell between the approval and its
// checks). A source retired in favour of the note citing it is history,
// not evidence that went stale.
func TestSupersedingNoteNotWithheldForItsSource(t *testing.T) {
	v := trustVault(t)
	humanCommit(t, v, map[string]string{"20-domains/infra/deployment-region.md": humanRegion})
	g := openGate(t, v)
	sd := session(t, v, "c-1")
	put(t, sd, "eu.md", "---\ntype: Fact\ntitle: Deployment region\nsources: [20-domains/infra/deployment-region.md]\n---\nProduction runs in eu-west-1.\n")
	s := once(t, g)
	eu := decisionFor(t, s, "eu.md")
	rtHeldBy(t, "eu.md", eu, decide.RuleConflict)
	d, err := g.ApproveWith(eu.ID, "alice", review.ApproveOptions{Supersede: true})
	if err != nil {
		t.Fatal(err)
	}
	sw, err := g.Sweep()
	if err != nil {
		t.Fatal(err)
	}
	if len(sw.Withheld) != 0 {
		t.Fatalf("the sweep withheld %+v right after the approval of %s", sw.Withheld, d.Path)
	}
	// The rule is narrow: the same source edited by a human afterwards
	// (not a supersession) still makes the note stale.
	humanCommit(t, v, map[string]string{"20-domains/infra/deployment-region.md": humanRegion + "\nEdited.\n"})
	if sw, err = g.Sweep(); err != nil {
		t.Fatal(err)
	}
	if len(sw.Withheld) != 1 || sw.Withheld[0].Path != d.Path {
		t.Fatalf("after an edit of its source: withheld %+v, want %s", sw.Withheld, d.Path)
	}
}
