package view

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestJudge(t *testing.T) {
	for _, c := range []struct {
		note, why string
		stale     bool
	}{
		{"no frontmatter at all\n", "", false},
		{"---\ntitle: A\n---\nbody\n", "", false},
		{"---\nstatus: stable\n---\n", "", false},
		{"---\nstatus: draft\n---\n", `status "draft"`, false},
		{"---\nstatus: deprecated\n---\n", `status "deprecated"`, false},
		{"---\nstatus: stable\nwithheld: {by: human:x}\n---\n", "withheld", false},
		{"---\nsuperseded_by: 20-domains/b.md\n---\n", "superseded by", false},
		{"---\nstale_after: 2020-01-01T00:00:00Z\n---\n", "", true},
	} {
		why, stale := Judge([]byte(c.note))
		if c.why == "" && why != "" || c.why != "" && !strings.Contains(why, c.why) || stale.IsZero() == c.stale {
			t.Errorf("%q: why %q stale %v, want %q stale %v", c.note, why, stale, c.why, c.stale)
		}
	}
}

func TestIsNoteAndPage(t *testing.T) {
	for p, want := range map[string]bool{
		"a/b.md": true, "top.md": true, "a/index.md": false, "a/log.md": false, "a/index/000001.md": false,
		"a/log/000002.md": false, "a/index/notes.md": true, "90-inbox/s/d.md": false, "99-archive/x.md": false,
		"a/.hidden/x.md": false, "a/b.txt": false,
	} {
		if got := IsNote(p); got != want {
			t.Errorf("IsNote(%q) = %v, want %v", p, got, want)
		}
	}
}

// TestFilterLinks: a page's lines that link a hidden note go, whatever
// the link's form, the rest stay; an archive page's links resolve from
// its own folder; nothing hidden, nothing changes.
func TestFilterLinks(t *testing.T) {
	hidden := func(p string) bool { return p == "d/b.md" || p == "e/x.md" }
	page := "# Index\n\n- [A](a.md)\n- [B](b.md)\n- [B again](./b.md)\n- [C](<b.md>)\n- [T](b.md \"t\")\n- [F](b.md#x)\n- [P](%62.md)\n- [[b|W]]\n- [O](../e/x.md)\n- [R][r]\n\n[r]: b.md\n- [M\n  more](b.md)\n- [Bb](bb.md)\n"
	if got := string(FilterLinks([]byte(page), "d/index.md", hidden)); got != "# Index\n\n- [A](a.md)\n\n- [Bb](bb.md)\n" {
		t.Errorf("filtered page:\n%s", got)
	}
	arch := "- [B](../b.md)\n- [A](../a.md)\n"
	if got := string(FilterLinks([]byte(arch), "d/index/000001.md", hidden)); got != "- [A](../a.md)\n" {
		t.Errorf("filtered archive page:\n%s", got)
	}
	if got := FilterLinks([]byte(page), "d/index.md", func(string) bool { return false }); string(got) != page {
		t.Errorf("a page with nothing hidden changed")
	}
}

func TestManifestRoundTripAndStale(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, ".git"), 0o755)
	m := &Manifest{Commit: "abc", Tree: "abc", Hidden: []Entry{{Path: "a/b.md", Why: "withheld"}}, Stale: []Stale{{Path: "a/c.md", After: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}}}
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(Path(dir), b, 0o644)
	if _, err := Read(dir, "def"); !errors.Is(err, ErrStale) {
		t.Errorf("a manifest for another commit: %v, want ErrStale", err)
	}
	got, err := Read(dir, "abc")
	if err != nil {
		t.Fatal(err)
	}
	if got.Tree != "abc" {
		t.Errorf("the view tree's commit did not round-trip: %q", got.Tree)
	}
	if at := got.At(time.Date(2029, 1, 1, 0, 0, 0, 0, time.UTC), nil); len(at) != 1 {
		t.Errorf("before stale_after: %v", at)
	}
	if at := got.At(time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC), nil); len(at) != 2 || at[1].Path != "a/c.md" {
		t.Errorf("after stale_after: %v", at)
	}
	os.WriteFile(Path(dir), []byte("fedmem-view 2 abc\nh ../etc/passwd\tx\n"), 0o644)
	if _, err := Read(dir, "abc"); err == nil || errors.Is(err, ErrStale) {
		t.Errorf("a manifest naming a path out of the vault: %v, want a parse error", err)
	}
}

func TestScan(t *testing.T) {
	dir := t.TempDir()
	for p, b := range map[string]string{
		"a/ok.md": "---\nstatus: stable\n---\n", "a/w.md": "---\nwithheld: yes\n---\n", "a/s.md": "---\nstale_after: 2020-01-01T00:00:00Z\n---\n",
		"a/index.md": "- [W](w.md)\n", "90-inbox/s/d.md": "---\nstatus: draft\n---\n", "99-archive/x.md": "---\nstatus: draft\n---\n",
		".git/x.md": "---\nstatus: draft\n---\n", "b/c/deep.md": "---\nstatus: deprecated\n---\n",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte(b), 0o644)
	}
	m, n, err := Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n != 5 || len(m.Hidden) != 2 || m.Hidden[0].Path != "a/w.md" || m.Hidden[1].Path != "b/c/deep.md" || len(m.Stale) != 1 {
		t.Errorf("scan: %d notes, hidden %v, stale %v", n, m.Hidden, m.Stale)
	}
	if f := Fixed(dir); len(f) != 2 {
		t.Errorf("fixed: %v, want .git and 99-archive", f)
	}
}

func TestManifestOddPaths(t *testing.T) {
	m := &Manifest{Commit: "c", Hidden: []Entry{{Path: "a/tab\there.md", Why: "why\nwith newline"}, {Path: "a/new\nline.md", Why: "w"}, {Path: `"quoted".md`, Why: "w"}, {Path: `back\slash.md`, Why: "w"}}}
	b, _ := m.Encode()
	got, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range m.Hidden {
		if got.Hidden[i].Path != e.Path {
			t.Errorf("path %q came back as %q", e.Path, got.Hidden[i].Path)
		}
	}
	if got.Hidden[0].Why != "why with newline" {
		t.Errorf("why %q", got.Hidden[0].Why)
	}
}
