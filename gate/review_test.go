package gate

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/vault/note"
)

func TestApproveSupersessionDeprecatesOldNoteInSameCommit(t *testing.T) {
	v := trustVault(t)
	sd := session(t, v, "s-1")
	put(t, sd, "old.md", "---\ntype: Fact\ntitle: Old rule\nsources: [10-projects/src.md]\n---\nold\n")
	g := openGate(t, v)
	old := decisionFor(t, once(t, g), "old.md")
	put(t, sd, "new.md", "---\ntype: Fact\ntitle: New rule\nconfidence: verified\nsupersedes: "+old.Path+"\n---\nnew\n")
	pend := decisionFor(t, once(t, g), "new.md")
	if pend.State != StatePending {
		t.Fatalf("%+v", pend)
	}
	list, err := g.Pending()
	if err != nil || len(list) != 1 || list[0].ID != pend.ID {
		t.Fatalf("Pending = %v %v", list, err)
	}
	if _, err := g.Approve(pend.ID, "bad name"); err == nil {
		t.Fatal("reviewer with a space accepted")
	}
	d, err := g.Approve(pend.ID, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if d.State != StatePromoted || d.Reviewer != "alice" || d.Path != "20-domains/new-rule.md" {
		t.Fatalf("%+v", d)
	}
	checkRepo(t, v)
	files := strings.Fields(gitCLI(t, v, "show", "--name-only", "--format=", "HEAD"))
	if strings.Join(files, " ") != "20-domains/index.md 20-domains/log.md 20-domains/new-rule.md 20-domains/old-rule.md" {
		t.Fatalf("approval commit touches %v; want the new note, the superseded one, index.md and log.md", files)
	}
	logMD, _ := os.ReadFile(filepath.Join(v, "20-domains", "log.md"))
	for _, want := range []string{"promoted [New rule](new-rule.md) from session s-1 by reviewer alice", "deprecated [old-rule.md](old-rule.md), superseded by /20-domains/new-rule.md"} {
		if !strings.Contains(string(logMD), want) {
			t.Errorf("log.md lacks %q:\n%s", want, logMD)
		}
	}
	if tr := gitCLI(t, v, "log", "-1", "--format=%(trailers)"); !strings.Contains(tr, "Fedmem-Reviewer: alice") {
		t.Errorf("trailers %q", tr)
	}
	b, _ := os.ReadFile(filepath.Join(v, old.Path))
	n, _ := note.Parse(b)
	if s, _ := n.Scalar("status"); s != "deprecated" {
		t.Errorf("old note status %q:\n%s", s, b)
	}
	if s, _ := n.Scalar("superseded_by"); s != d.Path {
		t.Errorf("superseded_by %q", s)
	}
	nb, _ := os.ReadFile(filepath.Join(v, d.Path))
	if !strings.Contains(string(nb), "by: human:alice") {
		t.Errorf("approved note lacks the human verification:\n%s", nb)
	}
	if _, err := g.Approve(pend.ID, "alice"); !errors.Is(err, ErrNotPending) {
		t.Fatalf("second approval: %v", err)
	}
	if _, err := os.Stat(filepath.Join(g.StateDir(), pendingDir, pend.ID+".draft")); !os.IsNotExist(err) {
		t.Errorf("pending copy kept after approval: %v", err)
	}
}

func TestReviewerRejectionIsRemembered(t *testing.T) {
	v := newVault(t)
	body := "---\ntype: Fact\ntitle: Guess\n---\nmaybe\n"
	put(t, session(t, v, "s-1"), "g.md", body)
	g := openGate(t, v)
	pend := decisionFor(t, once(t, g), "g.md")
	if _, err := g.RejectPending(pend.ID, "alice", ""); err == nil {
		t.Fatal("rejection without reason accepted")
	}
	d, err := g.RejectPending(pend.ID, "alice", "not true")
	if err != nil || d.State != StateRejected {
		t.Fatalf("%+v %v", d, err)
	}
	put(t, session(t, v, "s-2"), "again.md", body)
	d2 := decisionFor(t, once(t, g), "again.md")
	if d2.State != StateRejected || d2.DuplicateOf != pend.ID {
		t.Fatalf("resubmission after a human rejection: %+v", d2)
	}
}

// TestSupersedesOwnPathNotSelfDeprecated: a draft's `supersedes` names the
// path it will itself be promoted to (predictable: folder and title's
// slug). It is held (supersedes-missing: no such note yet); a reviewer
// approves it. The promotion must commit the note it scanned — not a
// rewrite of it, deprecated and superseded by itself, that no check saw.
func TestSupersedesOwnPathNotSelfDeprecated(t *testing.T) {
	v := trustVault(t)
	sd := session(t, v, "s-1")
	g := openGate(t, v)
	put(t, sd, "self.md", "---\ntype: Fact\ntitle: Self rule\nconfidence: verified\nsupersedes: 20-domains/self-rule.md\n---\nself\n")
	pend := decisionFor(t, once(t, g), "self.md")
	if pend.State != StatePending || !hasRule(pend, "supersedes-missing") {
		t.Fatalf("%+v", pend)
	}
	d, err := g.Approve(pend.ID, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if d.State != StatePromoted || d.Path != "20-domains/self-rule.md" {
		t.Fatalf("%+v", d)
	}
	checkRepo(t, v)
	b, _ := os.ReadFile(filepath.Join(v, d.Path))
	n, _ := note.Parse(b)
	if n == nil {
		t.Fatalf("promoted note does not parse:\n%s", b)
	}
	if s, _ := n.Scalar("status"); s == "deprecated" {
		t.Errorf("the promoted note was committed deprecated, superseded by itself:\n%s", b)
	}
	if s, ok := n.Scalar("superseded_by"); ok {
		t.Errorf("the promoted note names superseded_by %q:\n%s", s, b)
	}
	logMD, _ := os.ReadFile(filepath.Join(v, "20-domains", "log.md"))
	if strings.Contains(string(logMD), "deprecated [self-rule.md]") {
		t.Errorf("log.md says the new note deprecated itself:\n%s", logMD)
	}
}
