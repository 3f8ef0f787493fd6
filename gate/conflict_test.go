package gate

// Issue 24 item 3 and issue 19 item 3: conflicts across the whole vault,
// withheld names reserved, supersession risk, and contradictions decided
// by the reviewer instead of a `-2.md` beside the note in force. Each test
// replays a finding through a real gate on a real vault and failed on the
// code before (the draft promoted, or the approval made a second note).

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/fedmem/fedmem/test/testutil"
	"github.com/fedmem/fedmem/vault/note"
)

const humanRegion = "---\ntype: Fact\ntitle: Deployment region\n---\nProduction runs in us-east-1.\n"

// inForceNamed lists the notes in force in the work tree whose title or
// subject normalises to name (a walk of the files, independent of the
// gate's index).
func inForceNamed(t *testing.T, v, name string) []string {
	t.Helper()
	var out []string
	k := NormTitle(name)
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
		f := factsOf(b)
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
		rtHeldBy(t, n, d, RuleConflict)
		if !strings.Contains(reasonText(d, RuleConflict), "20-domains/infra/deployment-region.md") {
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

// TestConflictIndexFollowsHead: the index moves with HEAD by difference —
// a note moved to another folder, deprecated, or deleted is found where it
// is now, and nothing of the old place is left.
func TestConflictIndexFollowsHead(t *testing.T) {
	v := trustVault(t)
	humanCommit(t, v, map[string]string{"30-clients/acme/a/b/c/billing.md": "---\ntype: Fact\ntitle: Billing day\n---\nThe 3rd.\n"})
	g := openGate(t, v)
	held := func(title string) bool {
		t.Helper()
		_, head, _ := g.repo.Head()
		hv, err := newHeadView(g.repo, head)
		if err != nil {
			t.Fatal(err)
		}
		ns, err := hv.named(NormTitle(title))
		if err != nil {
			t.Fatal(err)
		}
		return len(ns) > 0
	}
	if !held("billing DAY") {
		t.Fatal("a note five folders deep is not indexed")
	}
	gitCLI(t, v, "mv", "30-clients/acme/a/b/c/billing.md", "20-domains/billing.md")
	gitCLI(t, v, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "-m", "move")
	_, head, _ := g.repo.Head()
	hv, _ := newHeadView(g.repo, head)
	ns, err := hv.named(NormTitle("Billing day"))
	if err != nil || len(ns) != 1 || ns[0].Path != "20-domains/billing.md" {
		t.Fatalf("after the move: %+v %v", ns, err)
	}
	humanCommit(t, v, map[string]string{"20-domains/billing.md": "---\ntype: Fact\ntitle: Billing day\nstatus: deprecated\n---\nThe 3rd.\n"})
	if held("Billing day") {
		t.Fatal("a deprecated note still holds its name")
	}
	humanCommit(t, v, map[string]string{"20-domains/billing.md": "---\ntype: Fact\ntitle: Billing day\n---\nThe 3rd.\n"})
	if !held("Billing day") {
		t.Fatal("the note back in force is not indexed")
	}
	gitCLI(t, v, "rm", "-q", "-r", "20-domains")
	gitCLI(t, v, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "-m", "rm")
	if held("Billing day") {
		t.Fatal("a deleted folder's note still holds its name")
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
	rtHeldBy(t, "b.md", b, RuleConflict)
	if !strings.Contains(reasonText(b, RuleConflict), "withheld") || !strings.Contains(reasonText(b, RuleConflict), a.Path) {
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
	rtHeldBy(t, "hijack.md", h, RuleSupersedesReviewed)
	rtHeldBy(t, "hijack.md", h, RuleSupersedesRisk)
	rtHeldBy(t, "human.md", ds["human.md"], RuleSupersedesReviewed)
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
	rtHeldBy(t, "eu.md", eu, RuleConflict)
	rtHeldBy(t, "staging.md", st, RuleConflict)
	head := gitCLI(t, v, "rev-parse", "HEAD")

	_, err := g.Approve(eu.ID, "alice")
	if !errors.Is(err, ErrContradiction) {
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
	if _, err := g.ApproveWith(eu.ID, "alice", ApproveOptions{Supersede: true, Title: "x"}); err == nil || !strings.Contains(err.Error(), "choose one") {
		t.Fatalf("--supersede with --title: %v", err)
	}
	for _, bad := range []string{"   ", "a\x01b", "!!!", strings.Repeat("x", 201)} {
		if _, err := g.ApproveWith(eu.ID, "alice", ApproveOptions{Title: bad}); err == nil || !strings.Contains(err.Error(), "not usable") {
			t.Errorf("retitle to %q: %v", bad, err)
		}
	}
	if p, _ := g.Pending(); len(p) != 2 {
		t.Fatalf("a refused choice decided the draft: %d pending", len(p))
	}

	d, err := g.ApproveWith(eu.ID, "alice", ApproveOptions{Supersede: true})
	if err != nil || d.State != StatePromoted {
		t.Fatalf("approve --supersede: %+v %v", d, err)
	}
	old, _ := os.ReadFile(filepath.Join(v, "20-domains/deployment-region.md"))
	of := factsOf(old)
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
	if _, err := g.Approve(st.ID, "alice"); !errors.Is(err, ErrContradiction) || !strings.Contains(err.Error(), d.Path) {
		t.Fatalf("second approval: %v", err)
	}
	d2, err := g.ApproveWith(st.ID, "alice", ApproveOptions{Title: "Staging deployment region"})
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

// vaultIndexWhole is the conflict index's answer computed from scratch: a
// walk of every tree at head (the reference for TestVaultIndexFollowsTrees).
func vaultIndexWhole(t *testing.T, g *Gate, head plumbing.Hash, k string) []namedNote {
	t.Helper()
	hv, err := newHeadView(g.repo, head)
	if err != nil {
		t.Fatal(err)
	}
	var titles, subjects []namedNote
	var walk func(tr *object.Tree, dir string)
	walk = func(tr *object.Tree, dir string) {
		for _, e := range tr.Entries {
			p := joinPath(dir, e.Name)
			if e.Mode == filemode.Dir {
				if !indexedDir(p) {
					continue
				}
				sub, err := g.repo.Tree(e.Hash)
				if err != nil {
					t.Fatal(err)
				}
				walk(sub, p)
				continue
			}
			if dir == "" || !e.Mode.IsFile() || e.Mode == filemode.Symlink || !strings.HasSuffix(e.Name, ".md") || e.Name == "index.md" || e.Name == "log.md" || isArchivePage(p) {
				continue
			}
			f, err := hv.facts(e.Hash)
			if err != nil {
				t.Fatal(err)
			}
			if !f.InForce && !f.Withheld {
				continue
			}
			w := f.Withheld && !f.InForce
			if f.Title == k {
				titles = append(titles, namedNote{Path: p, Withheld: w})
			}
			if f.Subject == k {
				subjects = append(subjects, namedNote{Path: p, Withheld: w, BySubject: true})
			}
		}
	}
	walk(hv.root, "")
	byPath := func(a, b namedNote) int { return strings.Compare(a.Path, b.Path) }
	slices.SortFunc(titles, byPath)
	slices.SortFunc(subjects, byPath)
	return append(titles, subjects...)
}

// TestVaultIndexFollowsTrees: the conflict index moves from root tree to
// root tree by their difference, through nested folders (notes added,
// deprecated, withheld, retitled, removed, a note replaced by a folder, a
// folder removed), forwards and back: at every commit, in any order, it
// answers what a walk of the whole vault answers.
func TestVaultIndexFollowsTrees(t *testing.T) {
	rng := testutil.Seed(t)
	v := newVault(t)
	g := openGate(t, v)
	dirs := []string{"20-domains", "20-domains/infra", "20-domains/infra/eu", "30-clients/acme", "99-archive", "90-inbox/s"}
	keys := []string{"deploy region", "rotation", "owner"}
	statuses := []string{"", "status: stable\n", "status: deprecated\n", "status: draft\n", "status: draft\nwithheld:\n  reason: stale\n"}
	var heads []plumbing.Hash
	for c := 0; c < 30; c++ {
		for k := 0; k < 1+rng.Intn(4); k++ {
			dir := dirs[rng.Intn(len(dirs))]
			rel := dir + "/" + fmt.Sprintf("n%d.md", rng.Intn(6))
			full := filepath.Join(v, filepath.FromSlash(rel))
			switch rng.Intn(8) {
			case 0:
				if _, err := os.Lstat(full); err == nil {
					gitCLI(t, v, "rm", "-q", "-r", "-f", "--", rel)
				}
				continue
			case 1:
				if _, err := os.Lstat(filepath.Join(v, dir)); err == nil {
					gitCLI(t, v, "rm", "-q", "-r", "-f", "--ignore-unmatch", "--", dir)
					os.RemoveAll(filepath.Join(v, dir))
				}
				continue
			case 2:
				os.RemoveAll(full)
				if err := os.MkdirAll(full, 0o755); err != nil {
					t.Fatal(err)
				}
				os.WriteFile(filepath.Join(full, "x.md"), []byte("---\ntype: Fact\ntitle: owner\n---\n"), 0o644)
			default:
				os.RemoveAll(full)
				body := "---\ntype: Fact\n" + statuses[rng.Intn(len(statuses))]
				if rng.Intn(4) != 0 {
					body += "title: " + strings.ToUpper(keys[rng.Intn(len(keys))]) + "\n"
				}
				if rng.Intn(3) == 0 {
					body += "subject: " + keys[rng.Intn(len(keys))] + "\n"
				}
				body += "---\nbody " + fmt.Sprint(rng.Int()) + "\n"
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			gitCLI(t, v, "add", "-A", "-f", "--", rel)
		}
		gitCLI(t, v, "-c", "user.name=Alice", "-c", "user.email=alice@example.com", "commit", "-q", "--allow-empty", "-m", "change")
		heads = append(heads, plumbing.NewHash(strings.TrimSpace(gitCLI(t, v, "rev-parse", "HEAD"))))
	}
	check := func(head plumbing.Hash) {
		hv, err := newHeadView(g.repo, head)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			got, err := hv.named(k)
			if err != nil {
				t.Fatal(err)
			}
			if want := vaultIndexWhole(t, g, head, k); !slices.Equal(got, want) {
				t.Fatalf("at %s, %q: the index says %v, the whole vault %v", head, k, got, want)
			}
		}
	}
	for _, h := range heads {
		check(h)
	}
	for i := 0; i < 80; i++ {
		check(heads[rng.Intn(len(heads))])
	}
}

// TestConflictIndexMovesByDifference: a commit that adds one note to a
// folder of 40 (two levels down) costs the index that one note. The index
// dropped every changed sub-folder and indexed it anew: each promotion into
// a folder of 20k notes read all of them again (50 ms of every review show
// and approval on the 100k-note vault).
func TestConflictIndexMovesByDifference(t *testing.T) {
	v := trustVault(t)
	notes := map[string]string{}
	for i := 0; i < 40; i++ {
		notes[fmt.Sprintf("20-domains/big/d0/n%02d.md", i)] = fmt.Sprintf("---\ntype: Fact\ntitle: Big note %d\n---\nbody %d\n", i, i)
	}
	humanCommit(t, v, notes)
	g := openGate(t, v)
	named := func(k string) int {
		t.Helper()
		_, head, _ := g.repo.Head()
		hv, err := newHeadView(g.repo, head)
		if err != nil {
			t.Fatal(err)
		}
		ns, err := hv.named(NormTitle(k))
		if err != nil {
			t.Fatal(err)
		}
		return len(ns)
	}
	added := func() int {
		vaultIndexes.Lock()
		defer vaultIndexes.Unlock()
		return vaultIndexes.m[g.repo.GitDir()].added
	}
	if named("Big note 7") != 1 {
		t.Fatal("the folder's note is not indexed")
	}
	before := added()
	humanCommit(t, v, map[string]string{"20-domains/big/d0/n40.md": "---\ntype: Fact\ntitle: Big note 40\n---\nbody 40\n"})
	if named("Big note 40") != 1 || named("Big note 7") != 1 {
		t.Fatal("after the commit the index misses a note")
	}
	if n := added() - before; n != 1 {
		t.Errorf("one note added to the folder; the index read %d notes again, want 1", n)
	}
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
	rtHeldBy(t, "eu.md", eu, RuleConflict)
	d, err := g.ApproveWith(eu.ID, "alice", ApproveOptions{Supersede: true})
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
