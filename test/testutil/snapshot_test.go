//go:build linux

package testutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestDiffSeesEveryChange proves that the snapshot used to judge escapes
// notices each kind of change a hostile agent could make.
func TestDiffSeesEveryChange(t *testing.T) {
	changes := []struct {
		name string
		do   func(root string) error
		want string
	}{
		{"content same size", func(r string) error { return os.WriteFile(filepath.Join(r, "a"), []byte("b"), 0o644) }, "sha256"},
		{"append", func(r string) error { return appendTo(filepath.Join(r, "a")) }, "size"},
		{"chmod", func(r string) error { return os.Chmod(filepath.Join(r, "a"), 0o600) }, "mode"},
		{"mtime", func(r string) error {
			return os.Chtimes(filepath.Join(r, "a"), time.Unix(1, 0), time.Unix(1, 0))
		}, "mtime"},
		{"replace by rename", func(r string) error {
			if err := os.WriteFile(filepath.Join(r, "n"), []byte("a"), 0o644); err != nil {
				return err
			}
			return os.Rename(filepath.Join(r, "n"), filepath.Join(r, "a"))
		}, "ino"},
		{"hard link elsewhere", func(r string) error { return os.Link(filepath.Join(r, "a"), filepath.Join(r, "d", "l")) }, "nlink"},
		{"xattr", func(r string) error { return unix.Lsetxattr(filepath.Join(r, "a"), "user.x", []byte("1"), 0) }, "xattrs"},
		{"symlink retarget", func(r string) error {
			os.Remove(filepath.Join(r, "s"))
			return os.Symlink("b", filepath.Join(r, "s"))
		}, "link"},
		{"remove", func(r string) error { return os.Remove(filepath.Join(r, "d", "f")) }, "removed  d/f"},
		{"add", func(r string) error { return os.WriteFile(filepath.Join(r, "d", "new"), nil, 0o644) }, "added    d/new"},
	}
	for _, c := range changes {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			must(t, os.WriteFile(filepath.Join(root, "a"), []byte("a"), 0o644))
			must(t, os.Mkdir(filepath.Join(root, "d"), 0o755))
			must(t, os.WriteFile(filepath.Join(root, "d", "f"), []byte("f"), 0o644))
			must(t, os.Symlink("a", filepath.Join(root, "s")))
			before, err := Take(root)
			must(t, err)
			if d := Diff(before, before, nil); len(d) != 0 {
				t.Fatalf("self diff: %v", d)
			}
			if err := c.do(root); err != nil {
				if err == unix.ENOTSUP || err == unix.EOPNOTSUPP {
					t.Skipf("filesystem: %v", err)
				}
				t.Fatal(err)
			}
			after, err := Take(root)
			must(t, err)
			d := strings.Join(Diff(before, after, nil), "\n")
			if !strings.Contains(d, c.want) {
				t.Fatalf("diff does not mention %q:\n%s", c.want, d)
			}
			if d := Diff(before, after, func(string) bool { return true }); len(d) != 0 {
				t.Fatalf("allow-all still reports %v", d)
			}
		})
	}
}

func appendTo(p string) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write([]byte("x"))
	return err
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
