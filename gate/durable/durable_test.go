package durable

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteAtomic: the content and mode land whole, and no temporary file
// is left beside the target.
func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "state.json")
	if err := WriteJSON(p, map[string]int{"a": 1}); err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomic(p, []byte("two\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "two\n" {
		t.Fatalf("read back %q, %v", b, err)
	}
	if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", fi.Mode().Perm())
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("folder holds %d entries, want only the target: %v", len(ents), ents)
	}
	var v map[string]int
	if err := ReadJSON(p, &v); err == nil {
		t.Errorf("ReadJSON of %q gave no error", b)
	}
}

// TestDeferredSync: below a deferred root a write is remembered by the
// syncer (synced at the barrier, Take), elsewhere and after Undefer it is
// not.
func TestDeferredSync(t *testing.T) {
	root, other := t.TempDir(), t.TempDir()
	s := NewSyncer()
	Defer([]string{root}, s)
	in, out := filepath.Join(root, "a"), filepath.Join(other, "b")
	if LazyFor(in) != s || LazyFor(out) != nil || LazyFor(root+"x") != nil {
		t.Fatalf("LazyFor: %p %p %p, want %p nil nil", LazyFor(in), LazyFor(out), LazyFor(root+"x"), s)
	}
	if err := WriteAtomic(in, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteAtomic(out, []byte("y"), 0o600); err != nil {
		t.Fatal(err)
	}
	set := s.Take()
	if !set.files[in] || !set.dirs[root] || set.files[out] {
		t.Errorf("the syncer holds %v %v, want %s and its folder only", set.files, set.dirs, in)
	}
	if err := set.Sync(); err != nil {
		t.Fatal(err)
	}
	Undefer([]string{root}, s)
	if LazyFor(in) != nil {
		t.Errorf("still deferred after Undefer")
	}
}
