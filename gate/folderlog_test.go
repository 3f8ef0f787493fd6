package gate

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/fedmem/fedmem/gate/commit"
	"github.com/fedmem/fedmem/gate/policy"
)

// promoteLines runs the gate's folder bookkeeping for one new note through
// its own commit path and returns the changes that commit wrote.
func promoteLines(t *testing.T, g *Gate, dest, title string) []change {
	t.Helper()
	branch, head, err := g.repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	cs := commit.NewChangeSet(g.repo, head)
	cs.Set(dest, []byte("---\ntype: Fact\ntitle: "+title+"\n---\nbody\n"))
	d := &Decision{ID: "x", Session: "s-1", SHA256: strings.Repeat("ab", 32)}
	if err := cs.NotePromoted(dest, title, d, time.Now()); err != nil {
		t.Fatal(err)
	}
	ch := cs.List()
	if _, err := g.repo.CommitChanges(branch, head, ch, g.signature(mustPolicy(t, g)), "fedmem: test\n\nFedmem-Decision: promoted\n"); err != nil {
		t.Fatal(err)
	}
	if err := g.repo.Checkout(ch); err != nil {
		t.Fatal(err)
	}
	return ch
}

func mustPolicy(t *testing.T, g *Gate) *policy.Policy {
	t.Helper()
	p, err := g.Policy()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// allLines reads a folder's page and every archive page of kind.
func allLines(t *testing.T, dir, kind string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(dir, kind, "*.md"))
	sort.Strings(files)
	for _, f := range append(files, filepath.Join(dir, kind+".md")) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "- ") {
				out[strings.ReplaceAll(l, "](../", "](")] = true // archive pages sit one folder down
			}
		}
	}
	return out
}

// Issue 7: log.md over 16 MiB was silently cut (6,514 lines lost in one
// promotion) and index.md was read the same way. Every line survives now,
// and the next promotion's cost no longer depends on the log's size.
func TestFolderLogNeverLosesALine(t *testing.T) {
	v := newVault(t)
	dir := filepath.Join(v, "20-domains")
	var big strings.Builder
	big.WriteString(commit.LogHeader)
	want := map[string]bool{}
	for i := 0; big.Len() <= 17<<20; i++ {
		l := fmt.Sprintf("- 2026-01-01T00:00:00Z promoted [Old note %d](old-%d.md) from session s by the gate (draft sha256 0123456789ab)", i, i)
		big.WriteString(l + "\n")
		want[l] = true
	}
	var idx strings.Builder
	idx.WriteString(commit.IndexHeader)
	wantIdx := map[string]bool{}
	for i := 0; idx.Len() <= commit.PageCap*3; i++ {
		l := fmt.Sprintf("- [Old note %d](old-%d.md)", i, i)
		idx.WriteString(l + "\n")
		wantIdx[l] = true
	}
	os.WriteFile(filepath.Join(dir, "log.md"), []byte(big.String()), 0o644)
	os.WriteFile(filepath.Join(dir, "index.md"), []byte(idx.String()), 0o644)
	gitCLI(t, v, "add", "20-domains/log.md", "20-domains/index.md")
	gitCLI(t, v, "-c", "user.name=h", "-c", "user.email=h@x", "commit", "-qm", "big log")
	t.Logf("log.md %d bytes, %d lines; index.md %d bytes", big.Len(), len(want), idx.Len())

	g := openGate(t, v)
	promoteLines(t, g, "20-domains/first.md", "First")
	ch := promoteLines(t, g, "20-domains/second.md", "Second")
	written := 0
	for _, c := range ch {
		written += len(c.Content)
	}
	if written > 2*commit.PageCap {
		t.Errorf("the second promotion wrote %d bytes of pages; want at most one page each (%d)", written, commit.PageCap)
	}
	got := allLines(t, dir, "log")
	for l := range want {
		if !got[l] {
			t.Fatalf("log line lost: %q (of %d)", l, len(want))
		}
	}
	n := 0
	for l := range got {
		if strings.Contains(l, "promoted [First](") || strings.Contains(l, "promoted [Second](") {
			n++
		}
	}
	gotIdx := allLines(t, dir, "index")
	for l := range wantIdx {
		if !gotIdx[l] {
			t.Fatalf("index line lost: %q", l)
		}
	}
	if n != 2 || !gotIdx["- [First](first.md)"] || !gotIdx["- [Second](second.md)"] {
		t.Fatalf("new lines missing: log %d, index %v %v", n, gotIdx["- [First](first.md)"], gotIdx["- [Second](second.md)"])
	}
	// Archive pages link back to the notes one folder up, and the page to
	// its archive.
	arch, _ := os.ReadFile(filepath.Join(dir, "log", "000001.md"))
	if !strings.Contains(string(arch), "](../old-0.md)") {
		t.Errorf("archive links not rewritten: %.300s", arch)
	}
	page, _ := os.ReadFile(filepath.Join(dir, "log.md"))
	if !strings.Contains(string(page), commit.OlderPrefix+"[log/000001.md](log/000001.md)") || len(page) > commit.PageCap {
		t.Errorf("log.md page (%d bytes): %.300s", len(page), page)
	}
	checkRepo(t, v)
}
