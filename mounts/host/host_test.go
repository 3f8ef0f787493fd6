package host

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// homesFrom lists each home of a passwd file once, links resolved where
// they exist, made or not, without / or relative ones, and /root.
func TestHomesFrom(t *testing.T) {
	dir := t.TempDir()
	alice := filepath.Join(dir, "alice")
	if err := os.Mkdir(alice, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "alice-link")
	if err := os.Symlink(alice, link); err != nil {
		t.Fatal(err)
	}
	passwd := filepath.Join(dir, "passwd")
	lines := "root:x:0:0:root:/root:/bin/bash\n" +
		"# comment\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n" +
		"slash:x:5:5::/:/bin/sh\n" +
		"alice:x:1000:1000::" + alice + ":/bin/bash\n" +
		"alias:x:1001:1001::" + link + ":/bin/bash\n" +
		"short:x:1002\n" +
		"rel:x:1003:1003::home/rel:/bin/sh\n"
	if err := os.WriteFile(passwd, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	got := homesFrom(passwd)
	var want []string
	if fi, err := os.Stat("/root"); err == nil && fi.IsDir() {
		want = append(want, "/root")
	}
	want = append(want, "/nonexistent", alice) // not made yet: a home all the same
	if !slices.Equal(got, want) {
		t.Errorf("homesFrom = %q, want %q", got, want)
	}
	if h := homesFrom(filepath.Join(dir, "absent")); slices.Contains(h, alice) {
		t.Errorf("an absent passwd listed %q", h)
	}
}
