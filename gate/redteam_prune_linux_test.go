package gate

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestRedteamPruneHostileInbox: what a host user of the agents' group (or
// a hand-made session) can put in 90-inbox/ does not make the sweep hang,
// fail or remove anything but an empty, idle session folder: a FIFO named
// like a session, a FIFO as an empty session's record (never opened for
// a blocking read), a record that is a huge sparse file, a record claiming an end 10 years ago on a
// folder changed an hour ago (the record never hastens a removal), and a
// folder whose only entry is a subfolder.
func TestRedteamPruneHostileInbox(t *testing.T) {
	v := newVault(t)
	inbox := filepath.Join(v, "90-inbox")
	g := openGate(t, v)
	old, recent := fixedNow.Add(-30*time.Hour), fixedNow.Add(-1*time.Hour)
	mkEmpty := func(sess string, mtime time.Time) string {
		d := session(t, v, sess)
		os.Remove(filepath.Join(inbox, ".sessions", sess+".json"))
		touch(t, d, mtime)
		return d
	}
	if err := unix.Mkfifo(filepath.Join(inbox, "fifo-session"), 0o666); err != nil {
		t.Fatal(err)
	}
	mkEmpty("fifo-record", old)
	if err := unix.Mkfifo(filepath.Join(inbox, ".sessions", "fifo-record.json"), 0o666); err != nil {
		t.Fatal(err)
	}
	mkEmpty("huge-record", old)
	f, err := os.Create(filepath.Join(inbox, ".sessions", "huge-record.json"))
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(1 << 34)
	f.Close()
	mkEmpty("forged-old-end", recent)
	setRecord(t, v, "forged-old-end", fixedNow.Add(-10*365*24*time.Hour).Format(time.RFC3339))
	nested := mkEmpty("nested", old)
	if err := os.Mkdir(filepath.Join(nested, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	touch(t, nested, old)

	s, err := g.Sweep()
	if err != nil {
		t.Fatal(err)
	}
	p := s.Sessions
	t.Logf("prune: %+v", p)
	// The FIFO record is not read (O_NONBLOCK, not a regular file) and the
	// sparse one is read only up to the bound: both folders are idle and
	// empty, so both go, as a folder without a record would.
	for _, sess := range []string{"fifo-record", "huge-record"} {
		if !slices.Contains(p.Pruned, sess) {
			t.Errorf("%s not pruned: %+v", sess, p)
		}
	}
	for _, sess := range []string{"forged-old-end", "nested", "fifo-session"} {
		if slices.Contains(p.Pruned, sess) {
			t.Errorf("BREACH: %s pruned", sess)
		}
		if _, err := os.Lstat(filepath.Join(inbox, sess)); errors.Is(err, fs.ErrNotExist) {
			t.Errorf("BREACH: %s removed", sess)
		}
	}
	if _, err := os.Stat(filepath.Join(nested, "sub")); err != nil {
		t.Errorf("BREACH: nested/sub lost: %v", err)
	}
	for _, keep := range []string{".sessions", ".sessions/fifo-record.json", ".sessions/huge-record.json"} {
		if _, err := os.Lstat(filepath.Join(inbox, keep)); err != nil {
			t.Errorf("BREACH: %s removed: %v", keep, err)
		}
	}
}
