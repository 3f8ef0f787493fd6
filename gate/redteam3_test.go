package gate

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRedteam3DirSwappedInAtClaimNotDeleted: the agent replaces a draft
// with a directory between the gate's look (fstatat: a readable regular
// file) and its rename into claims/ (the claim-journaled hook stands in for
// the agent winning that race; renameat2 moves a directory the gate may
// write). The gate must not delete the directory's files: nobody read them
// and no decision looked at them (docs/gate.md: "Nothing nobody read is
// deleted"; a directory stays in its session with a receipt).
func TestRedteam3DirSwappedInAtClaimNotDeleted(t *testing.T) {
	v := trustVault(t)
	sd := session(t, v, "rt3-swap")
	put(t, sd, "note.md", "---\ntype: Fact\ntitle: Swapped\n---\nguess\n")
	old := groupFault
	defer func() { groupFault = old }()
	swapped := false
	groupFault = func(p string) {
		if p != "claim-journaled" || swapped {
			return
		}
		swapped = true
		// The agent: note.md becomes a folder holding its work.
		if err := os.Rename(filepath.Join(sd, "note.md"), filepath.Join(sd, ".old")); err != nil {
			t.Error(err)
		}
		if err := os.Mkdir(filepath.Join(sd, "note.md"), 0o775); err != nil {
			t.Error(err)
		}
		put(t, filepath.Join(sd, "note.md"), "precious.md", "---\ntype: Fact\ntitle: Precious\n---\nthe agent's only copy\n")
	}
	g := openGate(t, v)
	s := once(t, g)
	if !swapped {
		t.Fatal("the claim hook never ran")
	}
	t.Logf("pass: promoted %d pending %d rejected %d errors %v", s.Promoted, s.Pending, s.Rejected, s.Errors)
	var found []string
	filepath.Walk(v, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Name() == "precious.md" {
			found = append(found, p)
		}
		return nil
	})
	filepath.Walk(g.StateDir(), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Name() == "precious.md" {
			found = append(found, p)
		}
		return nil
	})
	if len(found) == 0 {
		t.Fatalf("a file no decision looked at (note.md/precious.md, swapped in as a folder at the claim) was deleted by the gate; decisions %+v", s.Decisions)
	}
	if len(found) != 1 || found[0] != filepath.Join(sd, "note.md", "precious.md") {
		t.Errorf("the swapped-in folder is at %v; want it back in its session as %s", found, filepath.Join(sd, "note.md"))
	}
	if b, err := os.ReadFile(filepath.Join(sd, ".receipts", "note.md.json")); err != nil || !strings.Contains(string(b), StateUnclaimed) || !strings.Contains(string(b), "claim-not-regular") {
		t.Errorf("receipt of the folder: %v %s; want state unclaimed, rule claim-not-regular", err, b)
	}
}

// TestRedteam3UnclaimableFloodBoundedPerPass: limits.max_drafts_per_session
// bounds what one session costs a pass. Entries the gate leaves in place
// (folders, unreadable files) each cost a receipt in the session, an audit
// entry and a held/ mark in the gate's state directory, and were not
// counted: one session's 60 folders cost 60 of each in one pass with a cap
// of 3, and renaming them costs as many again, for ever (held/ marks of
// names that are gone are never removed).
func TestRedteam3UnclaimableFloodBoundedPerPass(t *testing.T) {
	const max, n = 3, 60
	v := trustVault(t)
	setPolicy(t, v, trustPolicy()+fmt.Sprintf("limits:\n  max_drafts_per_session: %d\n", max))
	sd := session(t, v, "rt3-flood")
	for i := 0; i < n; i++ {
		if err := os.Mkdir(filepath.Join(sd, fmt.Sprintf("d%03d.md", i)), 0o775); err != nil {
			t.Fatal(err)
		}
	}
	g := openGate(t, v)
	once(t, g)
	marks, _ := os.ReadDir(filepath.Join(g.StateDir(), heldDir))
	rcpts, _ := os.ReadDir(filepath.Join(sd, ".receipts"))
	b, _ := os.ReadFile(filepath.Join(g.StateDir(), "audit.jsonl"))
	unclaimed := strings.Count(string(b), `"unclaimed"`)
	t.Logf("one pass: %d held marks, %d receipts, %d unclaimed audit entries (cap %d)", len(marks), len(rcpts), unclaimed, max)
	if len(marks) > max || len(rcpts) > max || unclaimed > max {
		t.Errorf("one session's %d folders cost the pass %d held marks, %d receipts and %d audit entries; max_drafts_per_session is %d", n, len(marks), len(rcpts), unclaimed, max)
	}
}

// TestHeldMarksPrunedWhenGone: the held/ mark of an entry the gate left in
// place is dropped by the sweep once the entry is gone from its session,
// so an agent renaming folders it cannot submit does not grow the gate's
// state for ever; a mark whose entry is still there stays (its receipt is
// written once).
func TestHeldMarksPrunedWhenGone(t *testing.T) {
	v := trustVault(t)
	sd := session(t, v, "rt3-marks")
	for _, n := range []string{"gone.md", "kept.md"} {
		if err := os.Mkdir(filepath.Join(sd, n), 0o775); err != nil {
			t.Fatal(err)
		}
	}
	g := openGate(t, v)
	once(t, g)
	marks := func() int {
		m, _ := os.ReadDir(filepath.Join(g.StateDir(), heldDir))
		return len(m)
	}
	if marks() != 2 {
		t.Fatalf("%d held marks after the pass; want 2 (two folders left in place)", marks())
	}
	if err := os.Rename(filepath.Join(sd, "gone.md"), filepath.Join(sd, "renamed.md")); err != nil {
		t.Fatal(err)
	}
	s, err := g.Sweep()
	if err != nil {
		t.Fatal(err)
	}
	if got := marks(); got != 1 || s.Sessions == nil || s.Sessions.HeldMarksPruned != 1 {
		t.Fatalf("after the sweep: %d held marks, summary %+v; want 1 left (kept.md) and 1 pruned (gone.md)", got, s.Sessions)
	}
}
