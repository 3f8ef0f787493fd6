package gate

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestSparesWriteTheSameFiles: a gate with spare files (gate run
// --spares) writes a pass's decisions, pending copies, receipts and
// promoted notes into spares, and they hold what a gate without spares
// writes: the same states, receipts, modes, a clean work tree.
func TestSparesWriteTheSameFiles(t *testing.T) {
	v := trustVault(t)
	sd := session(t, v, "spare-1")
	put(t, sd, "good.md", "---\ntype: Fact\ntitle: Spare one\nsources: [10-projects/src.md]\n---\nThe system runs.\n")
	put(t, sd, "held.md", "---\ntype: Fact\ntitle: Spare two\nconfidence: hypothesis\nstatus: stable\n---\nMaybe.\n")
	g, err := Open(Options{Vault: v, AllowSameUser: true, Now: func() time.Time { return fixedNow }, Spares: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if _, err := g.spares.Fill(64, func() bool { return false }); err != nil {
		t.Fatal(err)
	}
	s := once(t, g)
	if len(s.Errors) > 0 || s.Promoted != 1 || s.Pending != 1 {
		t.Fatalf("pass: %d promoted, %d pending, errors %v", s.Promoted, s.Pending, s.Errors)
	}
	if used := 64 - g.SpareFiles(); used < 5 {
		t.Fatalf("the pass took %d spares; want the decisions, the pending copy, the receipts and the note", used)
	}
	for _, d := range s.Decisions {
		fi, err := os.Stat(filepath.Join(g.StateDir(), decisionsDir, d.ID+".json"))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("decision %s: %v %v", d.ID, err, fi)
		}
		r := readReceipt(t, sd, d.Draft)
		if r.ID != d.ID || r.State != d.State {
			t.Fatalf("receipt of %s: %+v", d.Draft, r)
		}
		if fi, _ := os.Stat(filepath.Join(sd, ".receipts", d.Draft+".json")); fi.Mode().Perm() != 0o644 {
			t.Fatalf("receipt mode %v", fi.Mode())
		}
		switch d.State {
		case StatePromoted:
			b, err := os.ReadFile(filepath.Join(v, filepath.FromSlash(d.Path)))
			if err != nil || len(b) == 0 {
				t.Fatalf("promoted note %s: %v", d.Path, err)
			}
			if fi, _ := os.Stat(filepath.Join(v, filepath.FromSlash(d.Path))); fi.Mode().Perm() != 0o644 {
				t.Fatalf("note mode %v", fi.Mode())
			}
		case StatePending:
			if b, err := os.ReadFile(filepath.Join(g.StateDir(), pendingDir, d.ID+".draft")); err != nil || len(b) == 0 {
				t.Fatalf("pending copy: %v", err)
			}
		}
	}
	if out := gitCLI(t, v, "status", "--porcelain", "--untracked-files=no"); out != "" {
		t.Fatalf("work tree not clean: %s", out)
	}
}
