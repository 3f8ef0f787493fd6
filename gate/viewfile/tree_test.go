package viewfile

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/internal/vaulttest"
	"github.com/fedmem/fedmem/test/testutil"
	"github.com/fedmem/fedmem/vault/repo"
	"github.com/fedmem/fedmem/vault/view"
)

// TestViewTreeFollowsCommits: after each of many random commits (notes
// in force and not, withheld, deleted, folders turned to files and back,
// links, executables, the archive, a dot folder, a submodule) and a work
// tree that differs from them (an untracked note, an edit not committed),
// the view tree holds every path in force at HEAD with HEAD's content,
// nothing untracked or never in force, nothing HEAD deleted; and the tree
// moved commit by commit equals one rebuilt at HEAD on what HEAD shows.
func TestViewTreeFollowsCommits(t *testing.T) {
	rng := testutil.Seed(t)
	v := vaulttest.New(t)
	dirs := []string{"20-domains", "20-domains/infra", "20-domains/infra/eu", "30-clients/acme", "99-archive", ".hidden"}
	statuses := []string{"", "", "status: stable\n", "status: deprecated\n", "status: draft\n", "withheld: {by: \"human:curator\", reason: poisoned}\n"}
	ever := map[string]bool{} // paths ever in force at a judged HEAD
	for c := 0; c < 25; c++ {
		for k := 0; k < 1+rng.Intn(5); k++ {
			dir := dirs[rng.Intn(len(dirs))]
			rel := dir + "/" + fmt.Sprintf("n%d.md", rng.Intn(5))
			full := filepath.Join(v, filepath.FromSlash(rel))
			switch rng.Intn(9) {
			case 0:
				if _, err := os.Lstat(full); err == nil {
					vaulttest.Git(t, v, "rm", "-q", "-r", "-f", "--", rel)
				}
				continue
			case 1:
				os.RemoveAll(full)
				must(t, os.MkdirAll(full, 0o755))
				must(t, os.WriteFile(filepath.Join(full, "x.md"), []byte("---\ntitle: inner\n---\nINNER\n"), 0o644))
			case 2:
				os.RemoveAll(full)
				must(t, os.MkdirAll(filepath.Dir(full), 0o755))
				must(t, os.Symlink("../elsewhere.md", full))
			case 3:
				os.RemoveAll(full)
				must(t, os.MkdirAll(filepath.Dir(full), 0o755))
				must(t, os.WriteFile(full, []byte("#!/bin/sh\necho hi\n"), 0o755))
			default:
				os.RemoveAll(full)
				must(t, os.MkdirAll(filepath.Dir(full), 0o755))
				body := "---\ntitle: N " + fmt.Sprint(rng.Int()) + "\n" + statuses[rng.Intn(len(statuses))] + "---\nbody " + fmt.Sprint(rng.Int()) + "\n"
				must(t, os.WriteFile(full, []byte(body), 0o644))
			}
			vaulttest.Git(t, v, "add", "-A", "--", rel)
		}
		if c == 10 {
			head := strings.TrimSpace(vaulttest.Git(t, v, "rev-parse", "HEAD"))
			vaulttest.Git(t, v, "update-index", "--add", "--cacheinfo", "160000,"+head+",10-projects/sub")
		}
		vaulttest.Git(t, v, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", fmt.Sprint(c))
		// The work tree moves on before the gate judges: never shown.
		must(t, os.MkdirAll(filepath.Join(v, "20-domains"), 0o755))
		must(t, os.WriteFile(filepath.Join(v, "20-domains/untracked.md"), []byte("---\ntitle: U\n---\nUNTRACKED\n"), 0o644))
		r := vaulttest.Open(t, v)
		_, head, err := r.Head()
		must(t, err)
		must(t, Write(r, v, head))
		m, err := view.Read(v, head.String())
		must(t, err)
		if m.Tree != head.String() {
			t.Fatalf("commit %d: the manifest names tree %q, HEAD is %s", c, m.Tree, head)
		}
		j := newJudged(m)
		hidden := j.hidden
		shown := shownAt(t, r, head)
		tree := view.TreeDir(v)
		inHead := map[string]bool{}
		must(t, r.Files(head, func(p string, mode repo.EntryMode, h repo.Hash) error {
			inHead[p] = true
			full := filepath.Join(tree, filepath.FromSlash(p))
			f, ok := shown[p]
			if ok && (hidden(p) || mode != repo.ModeRegular && mode != repo.ModeExecutable) {
				t.Errorf("commit %d: %s (mode %o) is shown, hidden %v", c, p, mode, hidden(p))
			}
			if !ok {
				if !ever[p] {
					if _, err := os.Lstat(full); err == nil {
						t.Errorf("commit %d: %s, never shown (mode %o), is in the view tree", c, p, mode)
					}
				}
				return nil
			}
			ever[p] = true
			if !same(r, full, p, f, j) {
				t.Errorf("commit %d: %s is not HEAD's %s in the view tree", c, p, h)
			}
			return nil
		}))
		// A plain note in force is shown: the allow-list is not empty.
		for p := range inHead {
			if strings.HasPrefix(p, "20-domains/") && !hidden(p) && !strings.Contains(p, "/.") && strings.HasSuffix(p, ".md") {
				if e, err := r.EntryAt(head, p); err == nil && e != nil && e.Mode == repo.ModeRegular {
					if _, ok := shown[p]; !ok {
						b, _ := r.FileAt(head, p)
						t.Errorf("commit %d: %s, a note in force, is not shown: %q", c, p, b)
					}
				}
			}
		}
		must(t, filepath.WalkDir(tree, func(full string, d fs.DirEntry, err error) error {
			must(t, err)
			if d.IsDir() {
				return nil
			}
			rel, _ := filepath.Rel(tree, full)
			rel = filepath.ToSlash(rel)
			if !inHead[rel] {
				t.Errorf("commit %d: %s is in the view tree, not in HEAD", c, rel)
			}
			if b, _ := os.ReadFile(full); bytes.Contains(b, []byte("UNTRACKED")) {
				t.Errorf("commit %d: the untracked note is in the view tree", c)
			}
			return nil
		}))
		// Rebuilt from nothing, the tree shows the same at HEAD.
		fresh := filepath.Join(t.TempDir(), "tree")
		must(t, syncTree(r, fresh, repo.ZeroHash, head, j, shown))
		must(t, filepath.WalkDir(fresh, func(full string, d fs.DirEntry, err error) error {
			must(t, err)
			rel, _ := filepath.Rel(fresh, full)
			if d.IsDir() || !shownFile(shown, filepath.ToSlash(rel)) {
				return nil
			}
			a, b, err := contents(full, filepath.Join(tree, rel))
			if err != nil || !bytes.Equal(a, b) {
				t.Errorf("commit %d: %s differs between the moved and the rebuilt tree (%v)", c, rel, err)
			}
			return nil
		}))
	}
}

// shownAt is a copy of what the conflict index shows at head.
func shownAt(t *testing.T, r *repo.Repo, head repo.Hash) map[string]decide.ShownFile {
	t.Helper()
	hv, err := decide.NewHeadView(r, head)
	must(t, err)
	out := map[string]decide.ShownFile{}
	must(t, hv.WithShown(func(m map[string]decide.ShownFile) error {
		for k, v := range m {
			out[k] = v
		}
		return nil
	}))
	return out
}

// contents reads two files, a link as its target.
func contents(p, q string) (a, b []byte, err error) {
	read := func(p string) ([]byte, error) {
		if l, err := os.Readlink(p); err == nil {
			return []byte("link " + l), nil
		}
		return os.ReadFile(p)
	}
	if a, err = read(p); err == nil {
		b, err = read(q)
	}
	return a, b, err
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestViewTreeNeverWritesThroughLinks: a commit's link in force (`a ->`
// a folder outside the vault, which a sync could bring) and a later
// commit's folder of that name with a note in it: the gate writes the
// note into a folder of its tree, never through the link into the folder
// outside — whether the tree is moved commit by commit or rebuilt.
func TestViewTreeNeverWritesThroughLinks(t *testing.T) {
	for _, rebuild := range []bool{false, true} {
		t.Run(fmt.Sprintf("rebuild=%v", rebuild), func(t *testing.T) {
			v := vaulttest.New(t)
			victim := t.TempDir()
			must(t, os.MkdirAll(filepath.Join(victim, "b"), 0o755))
			must(t, os.MkdirAll(filepath.Join(v, "20-domains"), 0o755))
			must(t, os.Symlink(victim, filepath.Join(v, "20-domains/a")))
			vaulttest.Git(t, v, "add", "-A")
			vaulttest.Git(t, v, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "link")
			write := func() repo.Hash {
				r := vaulttest.Open(t, v)
				_, head, err := r.Head()
				must(t, err)
				must(t, Write(r, v, head))
				return head
			}
			write()
			if _, err := os.Lstat(filepath.Join(view.TreeDir(v), "20-domains/a")); err == nil {
				t.Fatal("a committed link is in the tree (only regular files are shown)")
			}
			// A link left in the tree (an older tree's): the next writes
			// must not follow it.
			must(t, os.MkdirAll(filepath.Join(view.TreeDir(v), "20-domains"), 0o755))
			must(t, os.Symlink(victim, filepath.Join(view.TreeDir(v), "20-domains/a")))
			vaulttest.Git(t, v, "rm", "-q", "20-domains/a")
			vaulttest.Commit(t, v, map[string]string{"20-domains/a/b/x.md": "---\ntitle: X\n---\nx\n"})
			if rebuild {
				must(t, os.Remove(view.Path(v))) // no tree commit known: rebuilt whole
			}
			write()
			if _, err := os.Lstat(filepath.Join(victim, "b/x.md")); err == nil {
				t.Fatal("BREACH: the gate wrote through a link of its view tree, outside it")
			}
			fi, err := os.Lstat(filepath.Join(view.TreeDir(v), "20-domains/a"))
			if err != nil || !fi.IsDir() {
				t.Fatalf("20-domains/a is not a folder of the tree: %v %v", fi, err)
			}
			if b, err := os.ReadFile(filepath.Join(view.TreeDir(v), "20-domains/a/b/x.md")); err != nil || !strings.Contains(string(b), "title: X") {
				t.Fatalf("the note is not in the tree: %q %v", b, err)
			}
		})
	}
}

// TestViewTreePagesFiltered: a folder page in the tree lists no note of
// its folder that HEAD hides — one not in force when the page is
// written, one withheld later by a commit that leaves the page as it is,
// in an archive page too — whether moved or rebuilt; a note in force
// stays listed.
func TestViewTreePagesFiltered(t *testing.T) {
	for _, rebuild := range []bool{false, true} {
		t.Run(fmt.Sprintf("rebuild=%v", rebuild), func(t *testing.T) {
			v := vaulttest.New(t)
			page := "- [A](a.md)\n- [B](b.md)\n- [C](c.md)\n"
			vaulttest.Commit(t, v, map[string]string{
				"20-domains/a.md": "---\ntitle: A\n---\nA\n", "20-domains/b.md": "---\ntitle: B\nstatus: deprecated\n---\nB\n",
				"20-domains/c.md": "---\ntitle: C\n---\nC\n", "20-domains/index.md": page,
				"20-domains/index/000001.md": "- [A](../a.md)\n- [B](../b.md)\n",
			})
			write := func() {
				r := vaulttest.Open(t, v)
				_, head, err := r.Head()
				must(t, err)
				must(t, Write(r, v, head))
			}
			read := func(p string) string {
				b, err := os.ReadFile(filepath.Join(view.TreeDir(v), p))
				must(t, err)
				return string(b)
			}
			write()
			if got := read("20-domains/index.md"); got != "- [A](a.md)\n- [C](c.md)\n" {
				t.Errorf("the page lists a note not in force: %q", got)
			}
			vaulttest.Commit(t, v, map[string]string{"20-domains/a.md": "---\ntitle: A\nwithheld: {by: \"human:curator\", reason: poisoned}\n---\nA\n"})
			if rebuild {
				must(t, os.Remove(view.Path(v)))
			}
			write()
			if got := read("20-domains/index.md"); got != "- [C](c.md)\n" {
				t.Errorf("after a.md is withheld (the page unchanged), the tree's page: %q", got)
			}
			if got := read("20-domains/index/000001.md"); got != "" {
				t.Errorf("the archive page lists hidden notes: %q", got)
			}
		})
	}
}
