package gate

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fedmem/fedmem/test/testutil"
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

// TestGroupKillNineSpares is TestGroupPipelineKillNine with spare files:
// the killed gate writes its decisions, pending copies, receipts and notes
// into spares, and the gates that finish take spares from the same pool,
// including what the kill left there (a spare written, never renamed).
// Every draft is decided exactly once, one commit per promotion, nothing
// left claimed.
func TestGroupKillNineSpares(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	rng := testutil.Seed(t)
	points := []string{"claim-journaled", "decided", "receipted", "marked", "intents", "packed", "published", "index", "recorded", "synced", "cleaned"}
	rng.Shuffle(len(points), func(i, j int) { points[i], points[j] = points[j], points[i] })
	for round, point := range points {
		hit := 1 + rng.Intn(5)
		t.Run(fmt.Sprintf("%d-%s-%d", round, point, hit), func(t *testing.T) {
			v := trustVault(t)
			want := map[string]bool{}
			for _, sess := range []string{"sp-1", "sp-2"} {
				sd := session(t, v, sess)
				for i := 0; i < 6; i++ {
					body := fmt.Sprintf("---\ntype: Fact\ntitle: Fact %s %d\nsources: [10-projects/src.md]\n---\nfact %d\n", sess, i, i)
					if i%3 == 2 {
						body = fmt.Sprintf("---\ntype: Fact\ntitle: Guess %s %d\n---\nguess\n", sess, i)
					}
					name := fmt.Sprintf("d%02d.md", i)
					put(t, sd, name, body)
					want[sess+"/"+name] = true
				}
			}
			t.Setenv("FEDMEM_GROUP_HELPER_SPARES", "40")
			out, killed, err := runGroupHelper(t, v, point, hit, 3)
			if err != nil && !killed {
				t.Fatalf("helper failed: %v\n%s", err, out)
			}
			t.Logf("killed at %s #%d: %v", point, hit, killed)
			for i := 0; i < 2; i++ {
				g, err := Open(Options{Vault: v, AllowSameUser: true, Spares: 40})
				if err != nil {
					t.Fatal(err)
				}
				s, err := g.Once()
				g.Close()
				if err != nil || len(s.Errors) > 0 {
					t.Fatalf("pass %d after the kill: %v %v", i, err, s.Errors)
				}
			}
			checkExactlyOnce(t, v, want)
		})
	}
}
