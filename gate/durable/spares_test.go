package durable

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPoolFillTake(t *testing.T) {
	dir := t.TempDir()
	p, err := OpenPool(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := p.Fill(3, func() bool { return false }); err != nil || n != 3 || p.Len() != 3 {
		t.Fatalf("fill: made %d, %v; pool %d", n, err, p.Len())
	}
	// A fresh pool over the folder finds them again.
	if q, err := OpenPool(dir); err != nil || q.Len() != 3 {
		t.Fatalf("reopened pool: %v, %d spares", err, q.Len())
	}
	f, path := p.Take()
	if f == nil || filepath.Dir(path) != dir {
		t.Fatalf("take: %v %q", f, path)
	}
	f.Close()
	os.Remove(path)
	// What a crash leaves: a spare written but never renamed, a spare
	// that is a link. Neither is handed out; both are removed.
	f, path = p.Take()
	if _, err := f.Write([]byte("half written")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	p.names = append(p.names, filepath.Base(path))
	os.Symlink(filepath.Join(dir, "elsewhere"), filepath.Join(dir, SparePrefix+"link"))
	p.names = append(p.names, SparePrefix+"link")
	f, last := p.Take()
	if f == nil {
		t.Fatal("the good spare was not handed out")
	}
	f.Close()
	if f, _ := p.Take(); f != nil {
		t.Fatal("a written spare or a link was handed out")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 || ents[0].Name() != filepath.Base(last) {
		t.Fatalf("left in the pool's folder: %v", ents)
	}
	if n, _ := p.Fill(5, func() bool { return true }); n != 0 {
		t.Fatalf("a stopped fill made %d", n)
	}
}

// TestWriteAtomicTakesSpare: under UseSpares a write renames a spare into
// place with the bytes and mode asked; without one, or once DropSpares
// ran, it makes its own temporary file; the result is the same.
func TestWriteAtomicTakesSpare(t *testing.T) {
	root := t.TempDir()
	spare := filepath.Join(root, "spare")
	os.Mkdir(spare, 0o700)
	p, err := OpenPool(spare)
	if err != nil {
		t.Fatal(err)
	}
	p.Fill(1, func() bool { return false })
	UseSpares([]string{root}, p)
	for i, name := range []string{"a.json", "b.json"} { // the second finds the pool empty
		path := filepath.Join(root, name)
		if err := WriteAtomic(path, []byte(name), 0o640); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(path)
		fi, _ := os.Stat(path)
		if string(b) != name || fi.Mode().Perm() != 0o640 {
			t.Fatalf("write %d: %q mode %v", i, b, fi.Mode())
		}
		if p.Len() != 0 {
			t.Fatalf("write %d: pool holds %d", i, p.Len())
		}
	}
	if ents, _ := os.ReadDir(spare); len(ents) != 0 {
		t.Fatalf("spare folder: %v", ents)
	}
	DropSpares([]string{root}, p)
	if SparesFor(filepath.Join(root, "c")) != nil {
		t.Fatal("DropSpares left the pool in use")
	}
}
