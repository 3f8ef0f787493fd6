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
