package readers

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/vault"
)

func session(id, ended string, rr *vault.ReadReceipt) Session {
	return Session{SessionRecord: vault.SessionRecord{Session: id, Started: ended, Ended: ended, VaultReads: rr}}
}

// TestReadersMaybeSinceUnrecorded: a cut receipt that does not list the
// note is a "maybe", never a silent no; --since drops earlier reads; a
// session with no receipt is named as unrecorded, not as a non-reader.
func TestReadersMaybeSinceUnrecorded(t *testing.T) {
	read := func(p, at string) vault.VaultRead { return vault.VaultRead{Path: p, Blob: "b", First: at} }
	ss := []Session{
		session("old", "2026-01-01T00:00:00Z", &vault.ReadReceipt{Recorded: true, Reads: []vault.VaultRead{read("n.md", "2026-01-01T00:00:00Z")}}),
		session("new", "2026-02-01T00:00:00Z", &vault.ReadReceipt{Recorded: true, Reads: []vault.VaultRead{read("n.md", "2026-02-01T00:00:00Z")}}),
		session("other", "2026-02-01T00:00:00Z", &vault.ReadReceipt{Recorded: true, Reads: []vault.VaultRead{read("m.md", "2026-02-01T00:00:00Z")}}),
		session("cut", "2026-02-01T00:00:00Z", &vault.ReadReceipt{Recorded: true, Truncated: true, Reads: []vault.VaultRead{read("m.md", "2026-02-01T00:00:00Z")}}),
		session("blind", "2026-02-01T00:00:00Z", &vault.ReadReceipt{Unavailable: "unprivileged"}),
	}
	a := Readers(ss, "n.md", time.Time{})
	if got := ids(a.Readers); got != "old new cut" {
		t.Errorf("readers = %q, want old new cut", got)
	}
	if !a.Readers[2].Maybe || a.Readers[0].Maybe {
		t.Errorf("maybe flags: %+v", a.Readers)
	}
	if len(a.Unrecorded) != 1 || a.Unrecorded[0] != "blind" {
		t.Errorf("unrecorded = %v, want [blind]", a.Unrecorded)
	}
	since, _ := time.Parse(time.RFC3339, "2026-01-15T00:00:00Z")
	if got := ids(Readers(ss, "n.md", since).Readers); got != "new cut" {
		t.Errorf("since %v: readers = %q, want new cut", since, got)
	}
}

func ids(rs []Reader) string {
	s := ""
	for i, r := range rs {
		if i > 0 {
			s += " "
		}
		s += r.Session
	}
	return s
}

func TestNotePath(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"10-projects/a.md", "10-projects/a.md"}, {"/v/10-projects/a.md", "10-projects/a.md"}, {"./x//y.md", "x/y.md"},
		{"../etc/passwd", ""}, {"/etc/passwd", ""}, {".", ""},
	} {
		got, err := NotePath("/v", c.in)
		if c.want == "" && err == nil || c.want != "" && got != c.want {
			t.Errorf("NotePath(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// TestReadersMaybeWhenUnnamed: a receipt that does not list the note but
// has opens it could not name, or opens under the vault's .git (a note
// read through Git's objects is not named), cannot say the session did
// not read it: a "maybe" with the reason, never a silent no. A record
// that is not proven to be fedmem-run's counts as unrecorded, whatever
// its receipt claims (red team, issue 21).
func TestReadersMaybeWhenUnnamed(t *testing.T) {
	at := "2026-02-01T00:00:00Z"
	other := []vault.VaultRead{{Path: "m.md", First: at}}
	ss := []Session{
		session("git", at, &vault.ReadReceipt{Recorded: true, GitOpens: 3, Reads: other}),
		session("unnamed", at, &vault.ReadReceipt{Recorded: true, Unattributed: 1, Reads: other}),
		session("clean", at, &vault.ReadReceipt{Recorded: true, Reads: other}),
		session("forged", at, &vault.ReadReceipt{Recorded: true, Reads: []vault.VaultRead{{Path: "n.md", First: at}}}),
	}
	ss[3].Unproven = "written by uid 64001"
	a := Readers(ss, "n.md", time.Time{})
	if got := ids(a.Readers); got != "git unnamed" {
		t.Errorf("readers = %q, want git unnamed (maybe)", got)
	}
	for _, r := range a.Readers {
		if !r.Maybe || r.MaybeWhy == "" {
			t.Errorf("%s: maybe=%v why=%q, want a maybe with its reason", r.Session, r.Maybe, r.MaybeWhy)
		}
	}
	if len(a.Unrecorded) != 1 || a.Unrecorded[0] != "forged" || len(a.Problems) != 1 {
		t.Errorf("unrecorded = %v, problems %v: want the unproven record unrecorded, and said", a.Unrecorded, a.Problems)
	}
}

// TestLoadUnreadableRecordFailsClosed: a live record that cannot be read
// (larger than the bound, not JSON, a FIFO) still names its session, as
// one nobody recorded (it could have read any note), never dropped with
// a warning only; a FIFO is not opened for reading (no hang).
func TestLoadUnreadableRecordFailsClosed(t *testing.T) {
	v := t.TempDir()
	dir := filepath.Join(v, vault.SessionsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	big := `{"session":"big","pad":"` + strings.Repeat("x", vault.MaxSessionRecord) + `"}`
	for name, body := range map[string]string{"big.json": big, "bad.json": "{not json"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mkfifo(filepath.Join(dir, "fifo.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	ss, problems, err := Load(v, "")
	if err != nil {
		t.Fatal(err)
	}
	a := Readers(ss, "n.md", time.Time{})
	if got := strings.Join(a.Unrecorded, " "); got != "bad big fifo" || len(problems) != 3 {
		t.Errorf("unrecorded %q, problems %v: want bad big fifo, each said", got, problems)
	}
}

// TestReadersAnyProcessIsMaybe: a receipt recorded with inode marks (an
// unprivileged caller: attribution any-process) lists every opener's
// reads, so a note it lists is a "maybe" read of the session with its
// reason, never a plain one; a sandbox-attributed listing stays plain.
func TestReadersAnyProcessIsMaybe(t *testing.T) {
	at := "2026-02-01T00:00:00Z"
	n := []vault.VaultRead{{Path: "n.md", First: at}}
	ss := []Session{
		session("user", at, &vault.ReadReceipt{Recorded: true, Attribution: vault.AttributionAnyProcess, Reads: n}),
		session("root", at, &vault.ReadReceipt{Recorded: true, Attribution: vault.AttributionSandbox, Reads: n}),
	}
	a := Readers(ss, "n.md", time.Time{})
	if got := ids(a.Readers); got != "user root" {
		t.Fatalf("readers = %q, want user root", got)
	}
	if !a.Readers[0].Maybe || !strings.Contains(a.Readers[0].MaybeWhy, "any-process") || a.Readers[1].Maybe {
		t.Errorf("maybe flags: %+v", a.Readers)
	}
}
