package repo

import (
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/test/testutil"
	"github.com/fedmem/fedmem/vault"
)

// --launcher-group: 90-inbox/.sessions/ is the gate's, group G, 03770 and
// closed to others; a re-run without the option keeps it.
func TestLauncherGroupOwnsSessions(t *testing.T) {
	testutil.RequireRoot(t)
	dir := filepath.Join(testutil.TempDir(t), "vault")
	gate := &vault.Owner{UID: 64000, GID: 64000}
	check := func(when string) {
		t.Helper()
		var st unix.Stat_t
		if err := unix.Lstat(filepath.Join(dir, vault.SessionsDir), &st); err != nil {
			t.Fatal(err)
		}
		if st.Uid != 64000 || st.Gid != 64010 || st.Mode&0o7777 != 0o3770 {
			t.Fatalf("%s: .sessions owner %d:%d mode %04o; want 64000:64010 03770", when, st.Uid, st.Gid, st.Mode&0o7777)
		}
	}
	res, err := Init(dir, InitOptions{Gate: gate, LauncherGroup: &vault.Group{GID: 64010}, Reviewers: []string{"alice"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.LauncherGroup == nil || res.LauncherGroup.GID != 64010 {
		t.Fatalf("result %+v", res.LauncherGroup)
	}
	check("init")
	if _, err := Init(dir, InitOptions{}); err != nil {
		t.Fatal(err)
	}
	check("re-run without --launcher-group")
}
