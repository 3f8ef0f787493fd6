//go:build linux

package k8s

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPrepareInbox makes a real session directory (mode 2770, owned by the
// caller), accepts it again on a re-run, and refuses a link in its place,
// a bad session id and a 90-inbox that is a link.
func TestPrepareInbox(t *testing.T) {
	dir := t.TempDir()
	inbox := filepath.Join(dir, "90-inbox")
	if err := os.Mkdir(inbox, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := PrepareInbox(inbox, "3f1c2a9e-6d7b-4c1a-9f00-0123456789ab"); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(inbox, "3f1c2a9e-6d7b-4c1a-9f00-0123456789ab"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode&0o7777 != 0o2770 || int(st.Uid) != os.Geteuid() {
		t.Errorf("session dir mode %04o uid %d, want 2770 and %d", st.Mode&0o7777, st.Uid, os.Geteuid())
	}
	if err := PrepareInbox(inbox, "3f1c2a9e-6d7b-4c1a-9f00-0123456789ab"); err != nil {
		t.Errorf("re-run: %v", err)
	}
	// A link planted where the session directory goes is never followed.
	target := t.TempDir()
	if err := os.Symlink(target, filepath.Join(inbox, "planted")); err != nil {
		t.Fatal(err)
	}
	if err := PrepareInbox(inbox, "planted"); err == nil || !strings.Contains(err.Error(), "link") {
		t.Errorf("planted link: err %v", err)
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() == 0o770 {
		t.Error("the link's target was chmod-ed")
	}
	for _, bad := range []string{"", "..", "a/b", ".hidden", "-x", strings.Repeat("a", 65)} {
		if err := PrepareInbox(inbox, bad); err == nil || !strings.Contains(err.Error(), "session") {
			t.Errorf("session %q: err %v", bad, err)
		}
	}
	link := filepath.Join(dir, "inbox-link")
	if err := os.Symlink(inbox, link); err != nil {
		t.Fatal(err)
	}
	if err := PrepareInbox(link, "s1"); err == nil {
		t.Error("a 90-inbox that is a link was accepted")
	}
}
