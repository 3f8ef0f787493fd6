package vault

import (
	"os"
	"path/filepath"
	"testing"
)

func TestListSessions(t *testing.T) {
	v := t.TempDir()
	sd := filepath.Join(v, SessionsDir)
	os.MkdirAll(sd, 0o755)
	os.WriteFile(filepath.Join(sd, "s-old.json"), []byte(`{"session":"s-old","profile":"ci","uid":1000,"started":"2026-12-01T10:00:00Z","ended":"2026-12-01T10:05:00Z","workdir":"/w"}`), 0o644)
	os.WriteFile(filepath.Join(sd, "s-new.json"), []byte(`{"session":"s-new","profile":"claude","uid":1000,"started":"2026-12-01T11:00:00Z"}`), 0o644)
	os.WriteFile(filepath.Join(sd, "s-bad.json"), []byte(`{not json`), 0o644)
	os.WriteFile(filepath.Join(sd, "s-lie.json"), []byte(`{"session":"s-other","started":"2026-12-01T09:00:00Z"}`), 0o644)
	os.Symlink("/etc/passwd", filepath.Join(sd, "s-link.json"))
	in := filepath.Join(v, InboxDir, "s-new")
	os.MkdirAll(filepath.Join(in, ".receipts"), 0o755)
	os.WriteFile(filepath.Join(in, "a.md"), nil, 0o644)
	os.WriteFile(filepath.Join(in, "b.md"), nil, 0o644)
	got, err := ListSessions(v)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]SessionInfo{}
	for _, s := range got {
		by[s.Session] = s
	}
	if len(got) != 5 || got[0].Session != "s-new" {
		t.Fatalf("sessions %+v", got)
	}
	if s := by["s-new"]; !s.Open || s.Drafts != 2 || s.Profile != "claude" || s.Problem != "" {
		t.Errorf("s-new: %+v", s)
	}
	if s := by["s-old"]; s.Open || s.Drafts != -1 || s.Workdir != "/w" {
		t.Errorf("s-old: %+v", s)
	}
	for _, n := range []string{"s-bad", "s-lie", "s-link"} {
		if s := by[n]; s.Problem == "" || s.Open {
			t.Errorf("%s: no problem reported: %+v", n, s)
		}
	}
	if none, err := ListSessions(t.TempDir()); err != nil || none != nil {
		t.Errorf("vault without records: %v %v", none, err)
	}
}
