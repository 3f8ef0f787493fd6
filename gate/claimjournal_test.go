package gate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fedmem/fedmem/gate/durable"
	"github.com/fedmem/fedmem/gate/ledger"
)

// stateDrafts fills two sessions with promotable facts, held guesses, a
// held guess and a rejected draft submitted identically in both sessions
// (the second of each is a duplicate, found through seen/), and returns
// session/name of each.
func stateDrafts(t *testing.T, v string) map[string]bool {
	t.Helper()
	want := map[string]bool{}
	for _, sess := range []string{"j-1", "j-2"} {
		sd := session(t, v, sess)
		for i := 0; i < 6; i++ {
			var body string
			switch i {
			case 0, 1:
				body = fmt.Sprintf("---\ntype: Fact\ntitle: Fact %s %d\nsources: [10-projects/src.md]\n---\nfact %d\n", sess, i, i)
			case 2, 3:
				body = fmt.Sprintf("---\ntype: Fact\ntitle: Guess %s %d\n---\nguess\n", sess, i)
			case 4:
				body = "---\ntype: Fact\ntitle: Same guess\n---\nthe same bytes in both sessions\n"
			case 5:
				body = "---\ntype: Fact\ntype: Fact\n---\ndup key\n" // rejected, in both sessions
			}
			name := fmt.Sprintf("d%02d.md", i)
			put(t, sd, name, body)
			want[sess+"/"+name] = true
		}
	}
	return want
}

// checkSeenOnce: every content was decided once (the other decisions on it
// are duplicates of that one), and seen/ names that first decision.
func checkSeenOnce(t *testing.T, v string) {
	t.Helper()
	state := DefaultStateDir(v)
	decs, err := (&Gate{state: state}).Decisions()
	if err != nil {
		t.Fatal(err)
	}
	first := map[string][]string{}
	dups := 0
	for _, d := range decs {
		if d.SHA256 == "" {
			continue
		}
		if d.DuplicateOf == "" {
			first[d.SHA256] = append(first[d.SHA256], d.ID)
		} else {
			dups++
		}
	}
	if dups < 2 {
		t.Errorf("%d duplicate decisions; the identical drafts of both sessions make at least 2", dups)
	}
	for sum, ids := range first {
		if len(ids) != 1 {
			t.Errorf("content %s decided %d times (%v); want once, then duplicates", sum[:12], len(ids), ids)
			continue
		}
		var s seenRecord
		if err := durable.ReadJSON(filepath.Join(state, seenDir, sum+".json"), &s); err != nil {
			t.Errorf("content %s has no seen record: %v", sum[:12], err)
		} else if s.ID != ids[0] {
			t.Errorf("seen record of %s names %s; its decision is %s", sum[:12], s.ID, ids[0])
		}
	}
}

// TestClaimJournalKillNine kills the gate (SIGKILL, its own process) inside
// the per-draft state writes: after a claim's journal line and before its
// draft is moved (claim-journaled), between a decision and its seen link
// (decided), and between a receipt and the removal of the claimed draft
// (receipted), at the n-th time each is reached. A fresh gate then
// finishes: every draft decided exactly once (checkExactlyOnce: one
// decision each, one commit per promoted draft, no claim, journal or
// marker left, audit verified, receipts written), each content decided
// once with seen/ naming that decision.
func TestClaimJournalKillNine(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	for _, c := range []struct {
		point string
		hit   int
	}{{"claim-journaled", 1}, {"claim-journaled", 7}, {"decided", 1}, {"decided", 9}, {"receipted", 2}, {"receipted", 10}} {
		t.Run(fmt.Sprintf("%s-%d", c.point, c.hit), func(t *testing.T) {
			v := trustVault(t)
			want := stateDrafts(t, v)
			out, killed, err := runGroupHelper(t, v, c.point, c.hit, 4)
			if !killed {
				t.Fatalf("helper was not killed at %s #%d: %v\n%s", c.point, c.hit, err, out)
			}
			finishAfterKill(t, v)
			checkExactlyOnce(t, v, want)
			checkSeenOnce(t, v)
		})
	}
}

// TestLegacyClaimRecord: a claim an older gate made (claims/ID.json beside
// claims/ID.draft) is still decided, and both files are removed.
func TestLegacyClaimRecord(t *testing.T) {
	v := trustVault(t)
	sd := session(t, v, "l-1")
	put(t, sd, "old.md", "---\ntype: Fact\ntitle: Old claim\n---\nguess\n")
	state := DefaultStateDir(v)
	g, err := Open(Options{Vault: v, AllowSameUser: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	id := ledger.NewID(g.now())
	b, _ := json.MarshalIndent(Claim{ID: id, Session: "l-1", Name: "old.md", NameRaw: []byte("old.md"), FirstSeen: g.now().UTC()}, "", "  ")
	if err := os.WriteFile(filepath.Join(state, claimsDir, id+".json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(sd, "old.md"), filepath.Join(state, claimsDir, id+".draft")); err != nil {
		t.Fatal(err)
	}
	s, err := g.Once()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Errors) > 0 || len(s.Decisions) != 1 || s.Decisions[0].ID != id || s.Decisions[0].State != StatePending {
		t.Fatalf("legacy claim: %+v", s)
	}
	if left, _ := os.ReadDir(filepath.Join(state, claimsDir)); len(left) != 0 {
		t.Errorf("claims left: %v", left)
	}
	if _, err := os.Stat(filepath.Join(sd, ".receipts", "old.md.json")); err != nil {
		t.Errorf("no receipt: %v", err)
	}
}

// TestOrphanClaimReported: a claimed draft whose record is gone (a power
// loss can keep the rename and lose the journal line) is neither decided
// nor deleted: each pass reports it by name.
func TestOrphanClaimReported(t *testing.T) {
	v := trustVault(t)
	g, err := Open(Options{Vault: v, AllowSameUser: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	id := ledger.NewID(g.now())
	orphan := filepath.Join(g.StateDir(), claimsDir, id+".draft")
	if err := os.WriteFile(orphan, []byte("---\ntype: Fact\n---\nx\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		s, err := g.Once()
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Decisions) != 0 || len(s.Errors) != 1 || !strings.Contains(s.Errors[0], id+".draft has no claim record") {
			t.Fatalf("pass %d: %+v", i, s)
		}
		if _, err := os.Stat(orphan); err != nil {
			t.Fatalf("orphan draft removed: %v", err)
		}
	}
}

// TestIntakeClaimsJournaled: a draft that arrives while a pass decides
// (written here once the pass has listed the session) is taken in by
// the same pass (passIntake) through the journal, and decided there once.
func TestIntakeClaimsJournaled(t *testing.T) {
	v := trustVault(t)
	sd := session(t, v, "i-1")
	put(t, sd, "first.md", "---\ntype: Fact\ntitle: First\n---\nguess\n")
	old, oldIntake := groupFault, passIntake
	defer func() { groupFault, passIntake = old, oldIntake }()
	passIntake = time.Hour // the pass's age never ends the intake here
	wrote := false
	groupFault = func(p string) {
		if p == "claim-journaled" && !wrote {
			wrote = true
			put(t, sd, "late.md", "---\ntype: Fact\ntitle: Late\n---\nanother guess\n")
		}
	}
	g, err := Open(Options{Vault: v, AllowSameUser: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	s, err := g.Once()
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Errors) > 0 || s.Pending != 2 {
		ls, _ := os.ReadDir(sd)
		t.Fatalf("one pass: %d pending, errors %v; want both drafts held, the late one taken in (wrote %v, inbox %v, %+v)", s.Pending, s.Errors, wrote, ls, s.Timing)
	}
	if left, _ := os.ReadDir(filepath.Join(g.StateDir(), claimsDir)); len(left) != 0 {
		t.Errorf("claims left: %v", left)
	}
}
