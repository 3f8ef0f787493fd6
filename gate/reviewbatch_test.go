package gate

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/fedmem/fedmem/gate/review"
)

// heldBatch makes five held drafts: three Facts of session s-1, a Decision
// and a Fact of session s-2 (no auto_promote: every draft waits).
func heldBatch(t *testing.T) (string, *Gate, map[string]Decision) {
	t.Helper()
	v := newVault(t)
	s1, s2 := session(t, v, "s-1"), session(t, v, "s-2")
	put(t, s1, "a.md", "---\ntype: Fact\ntitle: Alpha fact\n---\nAlpha is the first letter.\n")
	put(t, s1, "b.md", "---\ntype: Fact\ntitle: Beta fact\n---\nBeta is the second letter.\n")
	put(t, s1, "c.md", "---\ntype: Fact\ntitle: Gamma fact\n---\nGamma is the third letter.\n")
	put(t, s2, "d.md", "---\ntype: Decision\ntitle: Delta decision\n---\nWe chose delta.\n")
	put(t, s2, "e.md", "---\ntype: Fact\ntitle: Epsilon fact\n---\nEpsilon is the fifth letter.\n")
	g := openGate(t, v)
	s := once(t, g)
	held := map[string]Decision{}
	for _, n := range []string{"a.md", "b.md", "c.md", "d.md", "e.md"} {
		d := decisionFor(t, s, n)
		if d.State != StatePending {
			t.Fatalf("%s not held: %+v", n, d)
		}
		held[n] = d
	}
	return v, g, held
}

func ids(ds []Decision) []string { return review.IDs(ds) }

func TestSelectFiltersAndRefusals(t *testing.T) {
	_, g, held := heldBatch(t)
	if _, err := g.Select(nil, review.Filter{}); err == nil || !strings.Contains(err.Error(), "--all") {
		t.Fatalf("no ids and no filter: %v; want a refusal naming --all", err)
	}
	if _, err := g.Select(nil, review.Filter{Session: "s-nope"}); !errors.Is(err, ErrNoMatch) || !strings.Contains(err.Error(), "--session s-nope") {
		t.Fatalf("filter matching nothing: %v", err)
	}
	got, err := g.Select(nil, review.Filter{Session: "s-1"})
	if err != nil || len(got) != 3 {
		t.Fatalf("--session s-1: %v %v", got, err)
	}
	for _, d := range got {
		if d.Session != "s-1" {
			t.Errorf("selected %s of session %s", d.ID, d.Session)
		}
	}
	if got, err := g.Select(nil, review.Filter{Type: "decision"}); err != nil || len(got) != 1 || got[0].ID != held["d.md"].ID {
		t.Fatalf("--type decision (any case): %v %v", got, err)
	}
	if got, err := g.Select(nil, review.Filter{All: true}); err != nil || len(got) != 5 {
		t.Fatalf("--all: %d %v", len(got), err)
	}
	// The profile is the one the gate proved (Origin), never the draft's.
	wantProfile := 0
	for _, d := range held {
		if review.OriginProfile(d.Origin) == testProfile {
			wantProfile++
		}
	}
	got, err = g.Select(nil, review.Filter{Profile: testProfile})
	if wantProfile == 0 {
		if !errors.Is(err, ErrNoMatch) {
			t.Fatalf("--profile with no proven origin: %v %v", got, err)
		}
	} else if err != nil || len(got) != wantProfile {
		t.Fatalf("--profile %s: %d %v, want %d", testProfile, len(got), err, wantProfile)
	}
	// Ids (prefixes) narrowed by a filter; a repeated id counts once.
	a, d := held["a.md"].ID, held["d.md"].ID
	tail := a[strings.LastIndexByte(a, '-')+1:][:6]
	got, err = g.Select([]string{tail, d, a}, review.Filter{Session: "s-1"})
	if err != nil || len(got) != 1 || got[0].ID != a {
		t.Fatalf("ids narrowed by --session: %v %v", got, err)
	}
	if _, err := g.Select([]string{"zzzzzz"}, review.Filter{}); !errors.Is(err, ErrNotPending) {
		t.Fatalf("unknown id: %v", err)
	}
	if _, err := g.Select([]string{"abc"}, review.Filter{}); err == nil || !strings.Contains(err.Error(), "too short") {
		t.Fatalf("short prefix: %v", err)
	}
}

func TestApproveAllOneCommitPerDraftAndNothingTwice(t *testing.T) {
	v, g, held := heldBatch(t)
	sel, err := g.Select(nil, review.Filter{Session: "s-1"})
	if err != nil {
		t.Fatal(err)
	}
	before := strings.TrimSpace(gitCLI(t, v, "rev-list", "--count", "HEAD"))
	// Two reviewers send the same batch at once: every draft is decided
	// once; the loser of each race gets an error for it, not a second note.
	var wg sync.WaitGroup
	res := make([][]review.BatchItem, 2)
	for i, who := range []string{"alice", "bob"} {
		wg.Add(1)
		go func() { defer wg.Done(); res[i] = g.ApproveAll(ids(sel), who, review.ApproveOptions{}) }()
	}
	wg.Wait()
	promoted := map[string]int{}
	for _, items := range res {
		for _, it := range items {
			if it.Error == "" {
				promoted[it.ID]++
				if it.Decision.State != StatePromoted {
					t.Errorf("%s: %+v", it.ID, it.Decision)
				}
			} else if !strings.Contains(it.Error, "no pending draft") && !strings.Contains(it.Error, "already promoted") {
				t.Errorf("%s: unexpected error %q", it.ID, it.Error)
			}
		}
	}
	for _, d := range sel {
		if promoted[d.ID] != 1 {
			t.Errorf("%s promoted %d times", d.ID, promoted[d.ID])
		}
	}
	if n := review.BatchFailed(res[0]) + review.BatchFailed(res[1]); n != len(sel) {
		t.Errorf("%d failures in the two batches, want %d (one per draft)", n, len(sel))
	}
	after := strings.TrimSpace(gitCLI(t, v, "rev-list", "--count", "HEAD"))
	if want := atoi(t, before) + len(sel); atoi(t, after) != want {
		t.Errorf("commits %s -> %s; want one per approved draft (%d)", before, after, want)
	}
	for _, title := range []string{"alpha-fact", "beta-fact", "gamma-fact"} {
		if _, err := os.Stat(filepath.Join(v, "20-domains", title+".md")); err != nil {
			t.Errorf("%s: %v", title, err)
		}
		if _, err := os.Stat(filepath.Join(v, "20-domains", title+"-2.md")); err == nil {
			t.Errorf("%s promoted twice (a -2 copy exists)", title)
		}
	}
	checkRepo(t, v)
	// Each approval commit touches its own note only (and the folder pages).
	for i := 0; i < len(sel); i++ {
		files := gitCLI(t, v, "show", "--name-only", "--format=", "HEAD~"+strconv.Itoa(i))
		notes := 0
		for _, f := range strings.Fields(files) {
			if !strings.HasSuffix(f, "index.md") && !strings.HasSuffix(f, "log.md") {
				notes++
			}
		}
		if notes != 1 {
			t.Errorf("commit HEAD~%d touches %d notes: %s", i, notes, files)
		}
	}
	// The rest of the queue is untouched, then rejected as a batch.
	rest, err := g.Select(nil, review.Filter{All: true})
	if err != nil || len(rest) != 2 {
		t.Fatalf("left held: %v %v", rest, err)
	}
	items := g.RejectAll(ids(rest), "alice", "not now")
	if review.BatchFailed(items) != 0 {
		t.Fatalf("reject batch: %+v", items)
	}
	for _, it := range items {
		if it.Decision.State != StateRejected || it.Decision.ReviewReason != "not now" {
			t.Errorf("%+v", it.Decision)
		}
	}
	if _, err := g.Select(nil, review.Filter{All: true}); !errors.Is(err, ErrNoMatch) {
		t.Fatalf("queue not empty after the batches: %v", err)
	}
	_ = held
}

func TestShortIDsResolveBack(t *testing.T) {
	_, g, held := heldBatch(t)
	var all []string
	for _, d := range held {
		all = append(all, d.ID)
	}
	short, err := g.ShortIDs(all)
	if err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, id := range all {
		s := short[id]
		if len(s) < MinIDPrefix || len(s) >= len(id) {
			t.Errorf("%s: short id %q", id, s)
		}
		got, err := g.ledger.Resolve(s, true)
		if err != nil || got != id {
			t.Errorf("short id %q resolves to %q %v, want %s", s, got, err, id)
		}
	}
	// A tail prefix that is also a prefix of another id is never shown.
	if got := shortID("20261201T000000Z-2026abcdef01", []string{"20261201T000000Z-2026abcdef01", "20261130T000000Z-ffff00000000"}); got != "2026a" {
		t.Errorf("shortID = %q; want 2026a (2026 also prefixes the other id)", got)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
