package gate

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/test/testutil"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// setRecord writes the session record of sess with the given end ("" for
// a session still running).
func setRecord(t *testing.T, v, sess, ended string) {
	t.Helper()
	rec := SessionRecord{Session: sess, Profile: testProfile, UID: os.Geteuid(), Started: "2026-11-27T00:00:00Z", Ended: ended}
	b, _ := json.Marshal(rec)
	if err := os.WriteFile(filepath.Join(v, "90-inbox", ".sessions", sess+".json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func touch(t *testing.T, p string, at time.Time) {
	t.Helper()
	if err := os.Chtimes(p, at, at); err != nil {
		t.Fatal(err)
	}
}

// TestSweepPrunesEmptySessions: the sweep removes an empty session folder
// whose grace period (24 h by default) passed since its record's end — or
// since the folder's last change when there is no record — and nothing
// else: not a folder holding a file or receipts, not a live session's, not
// one within the grace period, not a symlink; counts are reported.
func TestSweepPrunesEmptySessions(t *testing.T) {
	v := newVault(t)
	inbox := filepath.Join(v, "90-inbox")
	g := openGate(t, v) // now: fixedNow (2026-11-29T20:00Z)
	old, recent := fixedNow.Add(-30*time.Hour), fixedNow.Add(-2*time.Hour)
	mk := func(sess string, mtime time.Time, files ...string) string {
		d := session(t, v, sess) // writes a record with no end (live)
		os.Remove(filepath.Join(inbox, ".sessions", sess+".json"))
		for _, f := range files {
			p := filepath.Join(d, f)
			os.MkdirAll(filepath.Dir(p), 0o700)
			put(t, filepath.Dir(p), filepath.Base(p), "x")
		}
		touch(t, d, mtime)
		return d
	}
	mk("ended-long-ago", old)
	setRecord(t, v, "ended-long-ago", old.Format(time.RFC3339))
	mk("ended-recently", old)
	setRecord(t, v, "ended-recently", recent.Format(time.RFC3339))
	mk("live", old)
	setRecord(t, v, "live", "")
	mk("bad-end", old)
	setRecord(t, v, "bad-end", "yesterday")
	mk("no-record-idle", old)
	mk("no-record-busy", recent)
	mk("ended-but-changed", recent)
	setRecord(t, v, "ended-but-changed", old.Format(time.RFC3339))
	mk("has-receipts", old, ".receipts/a.md.json")
	setRecord(t, v, "has-receipts", old.Format(time.RFC3339))
	mk("has-draft", old, "half.md.tmp")
	// A symlink with a session's name, to an old empty folder elsewhere.
	outside := t.TempDir()
	touch(t, outside, old)
	if err := os.Symlink(outside, filepath.Join(inbox, "linked")); err != nil {
		t.Fatal(err)
	}

	s, err := g.Sweep()
	if err != nil {
		t.Fatal(err)
	}
	p := s.Sessions
	if p == nil {
		t.Fatal("sweep reports nothing about sessions")
	}
	slices.Sort(p.Pruned)
	if want := []string{"ended-long-ago", "no-record-idle"}; !slices.Equal(p.Pruned, want) {
		t.Errorf("pruned %v; want %v", p.Pruned, want)
	}
	if p.Waiting != 5 || p.Kept != 2 || p.AfterHours != 24 || len(p.Errors) != 0 {
		t.Errorf("summary %+v; want 5 waiting (ended-recently, live, bad-end, no-record-busy, ended-but-changed), 2 kept, after 24 h", p)
	}
	for _, sess := range []string{"ended-long-ago", "no-record-idle"} {
		if _, err := os.Lstat(filepath.Join(inbox, sess)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still there: %v", sess, err)
		}
	}
	for _, sess := range []string{"ended-recently", "live", "bad-end", "no-record-busy", "ended-but-changed", "has-receipts", "has-draft"} {
		if fi, err := os.Lstat(filepath.Join(inbox, sess)); err != nil || !fi.IsDir() {
			t.Errorf("%s removed: %v", sess, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(inbox, "has-receipts", ".receipts", "a.md.json")); err != nil || string(b) != "x" {
		t.Errorf("receipt lost: %q %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(inbox, "linked")); err != nil {
		t.Errorf("symlink or its target removed: %v", err)
	}
	if _, err := os.Stat(outside); err != nil {
		t.Errorf("symlink target removed: %v", err)
	}
	st, err := ReadPruneStatus(v, "")
	if err != nil || st == nil || st.Pruned != 2 || st.PrunedTotal != 2 || st.Waiting != 5 || st.Kept != 2 {
		t.Errorf("prune status %+v %v", st, err)
	}

	// A second sweep prunes nothing more; the total stays.
	if s, err = g.Sweep(); err != nil || len(s.Sessions.Pruned) != 0 {
		t.Fatalf("second sweep: %+v %v", s.Sessions, err)
	}
	if st, _ := ReadPruneStatus(v, ""); st == nil || st.Pruned != 0 || st.PrunedTotal != 2 {
		t.Errorf("prune status after a second sweep: %+v", st)
	}

	// The policy turns it off (0) or changes the grace period.
	pol := filepath.Join(v, "00-global", "policy.yaml")
	b, _ := os.ReadFile(pol)
	os.WriteFile(pol, append(b, "inbox:\n  prune_empty_sessions_after_hours: 0\n"...), 0o644)
	mk("idle-again", old)
	if s, err = g.Sweep(); err != nil || len(s.Sessions.Pruned) != 0 || s.Sessions.AfterHours != 0 {
		t.Fatalf("pruning off: %+v %v", s.Sessions, err)
	}
	os.WriteFile(pol, append(b, "inbox:\n  prune_empty_sessions_after_hours: 1\n"...), 0o644)
	if s, err = g.Sweep(); err != nil || !slices.Equal(sorted(s.Sessions.Pruned), []string{"ended-but-changed", "ended-recently", "idle-again", "no-record-busy"}) {
		t.Fatalf("1 h grace: %+v %v", s.Sessions, err)
	}
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

// TestPruneRacesAgentWrites: an agent that writes into its empty session
// folder while the gate prunes never loses a file: the gate's only removal
// is rmdir, which fails on a folder that is no longer empty. (A recursive
// or check-then-delete removal fails this test.)
func TestPruneRacesAgentWrites(t *testing.T) {
	v := newVault(t)
	g := openGate(t, v)
	d := filepath.Join(v, "90-inbox", "racer")
	old := fixedNow.Add(-48 * time.Hour)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var pruned int
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			p := g.sweepSessions(&policy.Policy{PruneEmptyAfterHours: 24}, fixedNow) // what Sweep runs
			pruned += len(p.Pruned)
			for _, e := range p.Errors {
				t.Errorf("prune: %s", e)
			}
		}
	}()
	rng := testutil.Seed(t)
	written, lost := 0, 0
	for i := 0; i < 3000; i++ {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			t.Fatal(err)
		}
		os.Chtimes(d, old, old) // idle for two days: a candidate
		// Give the pruner a varying head start (busy work, not a sleep).
		for k := rng.Intn(300); k > 0; k-- {
			os.Lstat(d)
		}
		f := filepath.Join(d, fmt.Sprintf("draft-%d.md", i))
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			continue // pruned between our mkdir and write: the write failed, nothing lost
		}
		written++
		if b, err := os.ReadFile(f); err != nil || string(b) != "x" {
			lost++
		}
		os.Remove(f)
	}
	close(stop)
	wg.Wait()
	t.Logf("%d writes, %d prunes", written, pruned)
	if lost > 0 {
		t.Fatalf("%d of %d drafts written into the session folder were lost to the prune", lost, written)
	}
	if written == 0 || pruned == 0 {
		t.Fatalf("the race did not happen (%d writes, %d prunes)", written, pruned)
	}
}
