package ledger

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/durable"
	"github.com/fedmem/fedmem/gate/record"
)

// newLedger is a ledger on a fresh state directory with its folders.
func newLedger(t *testing.T) (*Ledger, string) {
	t.Helper()
	state := t.TempDir()
	for _, d := range []string{DecisionsDir, PendingDir, SeenDir} {
		if err := os.MkdirAll(filepath.Join(state, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return New(state), state
}

// put writes d as the gate does: decisions/ID.json.
func put(t *testing.T, state string, d record.Decision) {
	t.Helper()
	if err := durable.WriteJSON(filepath.Join(state, DecisionsDir, d.ID+".json"), d); err != nil {
		t.Fatal(err)
	}
}

func TestNewIDIsValidAndUnique(t *testing.T) {
	now := time.Date(2026, 11, 30, 15, 4, 5, 123456789, time.UTC)
	seen := map[string]bool{}
	for range 1000 {
		id := NewID(now)
		if !ValidID(id) {
			t.Fatalf("NewID gave %q, which ValidID refuses", id)
		}
		if !strings.HasPrefix(id, "20261130T150405.123456789Z-") {
			t.Fatalf("NewID %q does not start with the UTC time", id)
		}
		if seen[id] {
			t.Fatalf("NewID repeated %q at the same instant", id)
		}
		seen[id] = true
	}
}

func TestValidIDRefusesPathsAndOddSizes(t *testing.T) {
	for _, id := range []string{
		"", "short", "../../../../etc/passwd-xx", "20261130T150405.0Z-a/b",
		"20261130T150405.0Z-a\x00b", strings.Repeat("a", 65), "20261130T150405.0Z ab",
	} {
		if ValidID(id) {
			t.Errorf("ValidID(%q) = true, want false", id)
		}
	}
	if !ValidID(NewID(time.Now())) {
		t.Error("ValidID refuses a fresh id")
	}
}

func TestLoadMissingIsNil(t *testing.T) {
	l, _ := newLedger(t)
	d, err := l.Load("20261130T150405.000000000Z-000000000000")
	if err != nil || d != nil {
		t.Fatalf("Load of an unrecorded id = %v, %v; want nil, nil", d, err)
	}
}

func TestLoadCorruptIsError(t *testing.T) {
	l, state := newLedger(t)
	id := "20261130T150405.000000000Z-0123456789ab"
	if err := os.WriteFile(filepath.Join(state, DecisionsDir, id+".json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if d, err := l.Load(id); err == nil {
		t.Fatalf("Load of a corrupt record = %+v, nil; want an error", d)
	}
}

func TestLinkSeenKeepsTheFirst(t *testing.T) {
	l, state := newLedger(t)
	first := record.Decision{ID: NewID(time.Now()), State: decide.StatePending, SHA256: "ab12"}
	second := record.Decision{ID: NewID(time.Now()), State: decide.StateRejected, SHA256: "ab12"}
	put(t, state, first)
	put(t, state, second)
	if err := l.LinkSeen(&first); err != nil {
		t.Fatal(err)
	}
	if err := l.LinkSeen(&second); err != nil {
		t.Fatalf("a second decision on the same content: %v (want the first kept, no error)", err)
	}
	s, err := l.LoadSeen("ab12")
	if err != nil || s == nil {
		t.Fatalf("LoadSeen = %v, %v", s, err)
	}
	if s.ID != first.ID || s.State != decide.StatePending {
		t.Fatalf("LoadSeen = %+v, want the first decision %s (pending)", s, first.ID)
	}
	// The seen record is the decision's own inode: no copy to drift.
	a, _ := os.Stat(filepath.Join(state, SeenDir, "ab12.json"))
	b, _ := os.Stat(filepath.Join(state, DecisionsDir, first.ID+".json"))
	if a == nil || b == nil || !os.SameFile(a, b) {
		t.Fatal("seen/ab12.json is not a hard link to the first decision's file")
	}
	if s, err := l.LoadSeen("ffff"); err != nil || s != nil {
		t.Fatalf("LoadSeen of unseen content = %v, %v; want nil, nil", s, err)
	}
}

func TestAllSkipsOtherFilesAndFailsOnCorrupt(t *testing.T) {
	l, state := newLedger(t)
	a := record.Decision{ID: "20261130T150405.000000001Z-aaaaaaaaaaaa", State: decide.StatePending}
	b := record.Decision{ID: "20261130T150405.000000002Z-bbbbbbbbbbbb", State: decide.StatePromoted}
	put(t, state, b)
	put(t, state, a)
	if err := os.WriteFile(filepath.Join(state, DecisionsDir, "x.json.tmp"), []byte("junk"), 0o600); err != nil {
		t.Fatal(err)
	}
	all, err := l.All()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].ID != a.ID || all[1].ID != b.ID {
		t.Fatalf("All = %+v; want %s then %s (oldest first), the temp file skipped", all, a.ID, b.ID)
	}
	if err := os.WriteFile(filepath.Join(state, DecisionsDir, "20261130T150405.000000003Z-cccccccccccc.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := l.All(); err == nil {
		t.Fatal("All over a corrupt record: no error (a decision would be silently dropped)")
	}
}

func TestResolvePrefixes(t *testing.T) {
	l, state := newLedger(t)
	held := record.Decision{ID: "20261130T150405.000000001Z-a1b2c3d4e5f6", State: decide.StatePending}
	held2 := record.Decision{ID: "20261130T150405.000000002Z-a1b2ffffffff", State: decide.StatePending}
	done := record.Decision{ID: "20261130T150405.000000003Z-9999c3d4e5f6", State: decide.StatePromoted,
		Decided: time.Date(2026, 11, 30, 16, 0, 0, 0, time.UTC), Reviewer: "alice"}
	dup := record.Decision{ID: "20261130T150405.000000004Z-77770000aaaa", State: decide.StatePending, DuplicateOf: held.ID}
	for _, d := range []record.Decision{held, held2, done, dup} {
		put(t, state, d)
	}

	if id, err := l.Resolve(held.ID, true); err != nil || id != held.ID {
		t.Fatalf("full id: %q, %v", id, err)
	}
	if id, err := l.Resolve("a1b2c3", true); err != nil || id != held.ID {
		t.Fatalf("unique tail prefix: %q, %v", id, err)
	}
	if id, err := l.Resolve("20261130T150405.000000002", false); err != nil || id != held2.ID {
		t.Fatalf("unique time prefix: %q, %v", id, err)
	}
	_, err := l.Resolve("a1b2", true)
	if !errors.Is(err, ErrAmbiguousID) || !strings.Contains(err.Error(), held.ID) || !strings.Contains(err.Error(), held2.ID) {
		t.Fatalf("ambiguous prefix: %v; want ErrAmbiguousID naming both", err)
	}
	if _, err := l.Resolve("a1b", true); err == nil || !strings.Contains(err.Error(), "too short") {
		t.Fatalf("3-character prefix: %v; want too short", err)
	}
	// A prefix never moves to another draft: the decided one is named and refused.
	_, err = l.Resolve("9999", true)
	if !errors.Is(err, ErrNotPending) || !strings.Contains(err.Error(), done.ID) || !strings.Contains(err.Error(), "alice") {
		t.Fatalf("prefix of a decided draft for approve: %v; want ErrNotPending naming it and its reviewer", err)
	}
	if id, err := l.Resolve("9999", false); err != nil || id != done.ID {
		t.Fatalf("prefix of a decided draft for show: %q, %v", id, err)
	}
	if _, err := l.Resolve("7777", true); !errors.Is(err, ErrNotPending) || !strings.Contains(err.Error(), "duplicate") {
		t.Fatalf("a held duplicate for approve: %v; want ErrNotPending saying it waits on its original", err)
	}
	for _, bad := range []string{"../x/../y", "zzzz", strings.Repeat("a", 80)} {
		if _, err := l.Resolve(bad, false); !errors.Is(err, ErrNotPending) {
			t.Errorf("Resolve(%q) = %v; want ErrNotPending", bad, err)
		}
	}
}

func TestDupIndex(t *testing.T) {
	l, state := newLedger(t)
	orig := record.Decision{ID: "20261130T150405.000000001Z-aaaaaaaaaaaa", State: decide.StatePending}
	d1 := record.Decision{ID: "20261130T150405.000000002Z-bbbbbbbbbbbb", State: decide.StatePending, DuplicateOf: orig.ID}
	settled := record.Decision{ID: "20261130T150405.000000003Z-cccccccccccc", State: decide.StateRejected, DuplicateOf: orig.ID}
	for _, d := range []record.Decision{orig, d1, settled} {
		put(t, state, d)
	}
	// Before the index is built, AddDup is a no-op: the first take scans.
	l.AddDup(orig.ID, "20261130T150405.000000009Z-999999999999")
	ids, err := l.TakeDups(orig.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || ids[0] != d1.ID {
		t.Fatalf("TakeDups after a scan = %v; want only the held duplicate %s", ids, d1.ID)
	}
	if ids, _ := l.TakeDups(orig.ID); len(ids) != 0 {
		t.Fatalf("TakeDups twice = %v; want them forgotten", ids)
	}
	// Once built, AddDup keeps it current without a rescan.
	l.AddDup(orig.ID, "x1")
	l.AddDup(orig.ID, "x2")
	ids, _ = l.TakeDups(orig.ID)
	sort.Strings(ids)
	if strings.Join(ids, ",") != "x1,x2" {
		t.Fatalf("TakeDups after AddDup = %v; want x1,x2", ids)
	}
}
