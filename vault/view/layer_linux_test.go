package view

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestBuildLayer: a whiteout (char 0:0) at each hidden path, the folder
// pages that list a hidden note rewritten without its line (an archive
// page too), pages that list none left out of the layer, and every
// folder of the layer read-only with its source's mode.
func TestBuildLayer(t *testing.T) {
	src, layer := t.TempDir(), t.TempDir()
	for p, b := range map[string]string{
		"a/b/w.md": "x", "a/b/ok.md": "x", "a/b/index.md": "- [W](w.md)\n- [Ok](ok.md)\n",
		"a/b/index/000001.md": "- [W](../w.md)\n- [Ok](../ok.md)\n", "a/b/log.md": "- promoted [Ok](ok.md)\n",
		"c/index.md": "- [C](c.md)\n",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(src, p)), 0o755)
		if err := os.WriteFile(filepath.Join(src, p), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(src, "a"), 0o750)
	if err := BuildLayer(layer, src, []string{"a/b/w.md", "gone/x.md"}, nil); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(layer, "a/b/w.md"), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != 0 {
		t.Errorf("a/b/w.md in the layer: %v mode %o rdev %d, want a whiteout", err, st.Mode, st.Rdev)
	}
	for p, want := range map[string]string{"a/b/index.md": "- [Ok](ok.md)\n", "a/b/index/000001.md": "- [Ok](../ok.md)\n"} {
		if b, err := os.ReadFile(filepath.Join(layer, p)); err != nil || string(b) != want {
			t.Errorf("%s in the layer: %q %v, want %q", p, b, err, want)
		}
	}
	for _, p := range []string{"a/b/log.md", "a/b/ok.md", "c", "gone"} {
		if _, err := os.Lstat(filepath.Join(layer, p)); !os.IsNotExist(err) {
			t.Errorf("%s is in the layer (%v): it hides or rewrites nothing", p, err)
		}
	}
	if fi, err := os.Stat(filepath.Join(layer, "a")); err != nil || fi.Mode().Perm() != 0o550 {
		t.Errorf("layer folder a: %v %v, want mode 0550 (its source's, read-only)", fi.Mode(), err)
	}
}

// TestBuildLayerPoints: a later mount's point the source lacks is made in
// the layer (a folder, or an empty file for a file's mount, the folders
// on the way read-only); one the source has as it is is left alone; a
// hidden path at or below a point is left to its mount; a hidden folder
// above a point shows only the way to it, each other entry a whiteout.
func TestBuildLayerPoints(t *testing.T) {
	src, layer := t.TempDir(), t.TempDir()
	for p, b := range map[string]string{
		"90-inbox/README.md": "x", ".hidden/secret.md": "SECRET", ".hidden/work/keep.md": "x", "a/there/f.md": "x",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(src, p)), 0o755)
		if err := os.WriteFile(filepath.Join(src, p), []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	points := []Point{{Path: "90-inbox", Dir: true}, {Path: "90-inbox/s1", Dir: true}, {Path: "work/deep", Dir: true},
		{Path: "x/secret.env", Dir: false}, {Path: "a/there", Dir: true}, {Path: ".hidden/work/w", Dir: true}}
	if err := BuildLayer(layer, src, []string{"90-inbox/README.md", ".hidden"}, points); err != nil {
		t.Fatal(err)
	}
	isWhiteout := func(p string) bool {
		var st unix.Stat_t
		return unix.Lstat(filepath.Join(layer, p), &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0
	}
	for _, p := range []string{"90-inbox/s1", "work/deep", ".hidden/work/w"} {
		if fi, err := os.Lstat(filepath.Join(layer, p)); err != nil || !fi.IsDir() {
			t.Errorf("mount point %s not a folder of the layer: %v", p, err)
		}
	}
	if fi, err := os.Lstat(filepath.Join(layer, "x/secret.env")); err != nil || !fi.Mode().IsRegular() || fi.Size() != 0 {
		t.Errorf("file mount point x/secret.env: %v %v", fi, err)
	}
	if fi, err := os.Stat(filepath.Join(layer, "work")); err != nil || fi.Mode().Perm() != 0o555 {
		t.Errorf("folder on the way to a point: %v %v, want 0555", fi, err)
	}
	if _, err := os.Lstat(filepath.Join(layer, "a/there")); !os.IsNotExist(err) {
		t.Errorf("a/there, a folder of the source, is in the layer: %v", err)
	}
	if isWhiteout("90-inbox/README.md") {
		t.Error("a hidden path below a mount point got a whiteout (its mount covers it)")
	}
	if !isWhiteout(".hidden/secret.md") {
		t.Error("BREACH: .hidden/secret.md, beside the way to a mount point in a hidden folder, is not whited out")
	}
	if isWhiteout(".hidden") || isWhiteout(".hidden/work") {
		t.Error("a folder on the way to a mount point is a whiteout: the mount cannot be made")
	}
	if !isWhiteout(".hidden/work/keep.md") {
		t.Error("BREACH: .hidden/work/keep.md is not whited out")
	}
}
