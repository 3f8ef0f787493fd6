package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

type later []string

func (l *later) Add(p string) { *l = append(*l, p) }

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, p, []byte("new"), 0o600, nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Fatalf("content %q", b)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode())
	}
	var l later
	if err := Write(dir, p, []byte("deferred"), 0o600, &l); err != nil {
		t.Fatal(err)
	}
	if len(l) != 1 || l[0] != p {
		t.Fatalf("later got %v, want [%s]", l, p)
	}
	// A rename that fails leaves neither a temporary file nor a change.
	if err := Write(dir, filepath.Join(dir, "missing", "g"), []byte("x"), 0o600, nil); err == nil {
		t.Fatal("a write into a missing folder succeeded")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("left behind: %v", ents)
	}
}
