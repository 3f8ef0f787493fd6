package mounts

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLinksAsEvalSymlinks: a Links view resolves every path of a tree of
// relative, absolute, chained, looping and dangling links, '..' after a
// link, a file in the middle of a path and missing entries exactly as
// filepath.EvalSymlinks does (same result, same error text), asked once
// and again from what it remembers.
func TestLinksAsEvalSymlinks(t *testing.T) {
	d := t.TempDir()
	if r, err := filepath.EvalSymlinks(d); err == nil {
		d = r
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"a/b/c", "x/y", "home/u/.cache", "usr/bin"} {
		must(os.MkdirAll(filepath.Join(d, p), 0o755))
	}
	must(os.WriteFile(filepath.Join(d, "a/file"), []byte("x"), 0o644))
	links := map[string]string{
		"rel":          "a/b",
		"abs":          filepath.Join(d, "x"),
		"chain":        "rel",
		"a/b/up":       "../../x/y",
		"a/b/c/deep":   "../../../home/u",
		"loop1":        "loop2",
		"loop2":        "loop1",
		"dangling":     "nowhere/at/all",
		"tofile":       "a/file",
		"bin":          "usr/bin",
		"home/u/bin":   "../../bin",
		"home/u/dot":   ".",
		"x/y/root":     "/",
		"x/y/selfdir":  "../y",
		"x/parentlink": "..",
	}
	for name, target := range links {
		must(os.Symlink(target, filepath.Join(d, name)))
	}
	rels := []string{
		"", "rel", "rel/c", "rel/../x", "chain/c/deep/.cache", "a/b/up", "a/b/up/..", "a/b/up/../y/root/" + d[1:],
		"abs/y", "abs/y/../y/selfdir/selfdir/root", "loop1", "loop2/x", "dangling", "dangling/more",
		"tofile", "tofile/x", "a/file/x", "missing", "missing/x", "bin", "home/u/bin", "home/u/bin/../..",
		"home/u/dot/dot/bin", "x/parentlink/rel/c", "x/parentlink/..", "a//b/./c/", "a/b/c/deep/bin/",
		"home/u/.cache/../../u/./.cache",
	}
	l := NewLinks()
	for round := 0; round < 2; round++ {
		for _, r := range rels {
			p := d + "/" + r
			want, wantErr := filepath.EvalSymlinks(p)
			got, gotErr := l.EvalSymlinks(p)
			if got != want || (wantErr == nil) != (gotErr == nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
				t.Errorf("round %d, %s: got %q, %v; EvalSymlinks %q, %v", round, r, got, gotErr, want, wantErr)
			}
			if rp, want := l.RealPath(p), (func() string {
				if wantErr == nil {
					return want
				}
				return p
			})(); rp != want {
				t.Errorf("RealPath(%s) = %q, want %q", r, rp, want)
			}
		}
	}
	var nilView *Links
	if got, err := nilView.EvalSymlinks(d + "/rel"); err != nil || got != d+"/a/b" {
		t.Errorf("nil view: %q, %v", got, err)
	}
}

// TestLinksIsOneView: what a view found stays what it says, a change
// after it looked included; a fresh view sees the change.
func TestLinksIsOneView(t *testing.T) {
	d := t.TempDir()
	if r, err := filepath.EvalSymlinks(d); err == nil {
		d = r
	}
	if err := os.Mkdir(filepath.Join(d, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a", filepath.Join(d, "l")); err != nil {
		t.Fatal(err)
	}
	l := NewLinks()
	if got, _ := l.EvalSymlinks(d + "/l"); got != d+"/a" {
		t.Fatalf("got %q", got)
	}
	if _, err := l.EvalSymlinks(d + "/new"); err == nil {
		t.Fatal("a missing path resolved")
	}
	if err := os.Mkdir(filepath.Join(d, "new"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := l.EvalSymlinks(d + "/new"); err == nil {
		t.Error("the view saw a folder made after it looked")
	}
	if got, err := NewLinks().EvalSymlinks(d + "/new"); err != nil || got != d+"/new" {
		t.Errorf("a fresh view: %q, %v", got, err)
	}
}
