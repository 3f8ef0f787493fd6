package decide

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/fedmem/fedmem/test/testutil"
	"github.com/fedmem/fedmem/vault/repo"
	"github.com/fedmem/fedmem/vault/view"
)

// TestConflictIndexFollowsHead: the index moves with HEAD by difference —
// a note moved to another folder, deprecated, or deleted is found where it
// is now, and nothing of the old place is left.
func TestConflictIndexFollowsHead(t *testing.T) {
	v := srcVault(t)
	humanCommit(t, v, map[string]string{"30-clients/acme/a/b/c/billing.md": "---\ntype: Fact\ntitle: Billing day\n---\nThe 3rd.\n"})
	r := openRepo(t, v)
	held := func(title string) bool {
		t.Helper()
		_, head, _ := r.Head()
		hv, err := NewHeadView(r, head)
		if err != nil {
			t.Fatal(err)
		}
		ns, err := hv.named(NormTitle(title))
		if err != nil {
			t.Fatal(err)
		}
		return len(ns) > 0
	}
	if !held("billing DAY") {
		t.Fatal("a note five folders deep is not indexed")
	}
	gitCLI(t, v, "mv", "30-clients/acme/a/b/c/billing.md", "20-domains/billing.md")
	gitCLI(t, v, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "-m", "move")
	_, head, _ := r.Head()
	hv, _ := NewHeadView(r, head)
	ns, err := hv.named(NormTitle("Billing day"))
	if err != nil || len(ns) != 1 || ns[0].Path != "20-domains/billing.md" {
		t.Fatalf("after the move: %+v %v", ns, err)
	}
	humanCommit(t, v, map[string]string{"20-domains/billing.md": "---\ntype: Fact\ntitle: Billing day\nstatus: deprecated\n---\nThe 3rd.\n"})
	if held("Billing day") {
		t.Fatal("a deprecated note still holds its name")
	}
	humanCommit(t, v, map[string]string{"20-domains/billing.md": "---\ntype: Fact\ntitle: Billing day\n---\nThe 3rd.\n"})
	if !held("Billing day") {
		t.Fatal("the note back in force is not indexed")
	}
	gitCLI(t, v, "rm", "-q", "-r", "20-domains")
	gitCLI(t, v, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "-m", "rm")
	if held("Billing day") {
		t.Fatal("a deleted folder's note still holds its name")
	}
}

// vaultIndexWhole is the conflict index's answer computed from scratch: a
// walk of every tree at head (the reference for TestVaultIndexFollowsTrees).
func vaultIndexWhole(t *testing.T, r *repo.Repo, head plumbing.Hash, k string) []namedNote {
	t.Helper()
	hv, err := NewHeadView(r, head)
	if err != nil {
		t.Fatal(err)
	}
	var titles, subjects []namedNote
	var walk func(tr *object.Tree, dir string)
	walk = func(tr *object.Tree, dir string) {
		for _, e := range tr.Entries {
			p := joinPath(dir, e.Name)
			if e.Mode == filemode.Dir {
				if !indexedDir(p) {
					continue
				}
				sub, err := r.Tree(e.Hash)
				if err != nil {
					t.Fatal(err)
				}
				walk(sub, p)
				continue
			}
			if dir == "" || !e.Mode.IsFile() || e.Mode == filemode.Symlink || !strings.HasSuffix(e.Name, ".md") || e.Name == "index.md" || e.Name == "log.md" || view.IsArchivePage(p) {
				continue
			}
			f, err := hv.Facts(e.Hash)
			if err != nil {
				t.Fatal(err)
			}
			if !f.InForce && !f.Withheld {
				continue
			}
			w := f.Withheld && !f.InForce
			if f.Title == k {
				titles = append(titles, namedNote{Path: p, Withheld: w})
			}
			if f.Subject == k {
				subjects = append(subjects, namedNote{Path: p, Withheld: w, BySubject: true})
			}
		}
	}
	walk(hv.root, "")
	byPath := func(a, b namedNote) int { return strings.Compare(a.Path, b.Path) }
	slices.SortFunc(titles, byPath)
	slices.SortFunc(subjects, byPath)
	return append(titles, subjects...)
}

// TestVaultIndexFollowsTrees: the conflict index moves from root tree to
// root tree by their difference, through nested folders (notes added,
// deprecated, withheld, retitled, removed, a note replaced by a folder, a
// folder removed), forwards and back: at every commit, in any order, it
// answers what a walk of the whole vault answers.
func TestVaultIndexFollowsTrees(t *testing.T) {
	rng := testutil.Seed(t)
	v := newVault(t)
	r := openRepo(t, v)
	dirs := []string{"20-domains", "20-domains/infra", "20-domains/infra/eu", "30-clients/acme", "99-archive", "90-inbox/s"}
	keys := []string{"deploy region", "rotation", "owner"}
	statuses := []string{"", "status: stable\n", "status: deprecated\n", "status: draft\n", "status: draft\nwithheld:\n  reason: stale\n"}
	var heads []plumbing.Hash
	for c := 0; c < 30; c++ {
		for k := 0; k < 1+rng.Intn(4); k++ {
			dir := dirs[rng.Intn(len(dirs))]
			rel := dir + "/" + fmt.Sprintf("n%d.md", rng.Intn(6))
			full := filepath.Join(v, filepath.FromSlash(rel))
			switch rng.Intn(8) {
			case 0:
				if _, err := os.Lstat(full); err == nil {
					gitCLI(t, v, "rm", "-q", "-r", "-f", "--", rel)
				}
				continue
			case 1:
				if _, err := os.Lstat(filepath.Join(v, dir)); err == nil {
					gitCLI(t, v, "rm", "-q", "-r", "-f", "--ignore-unmatch", "--", dir)
					os.RemoveAll(filepath.Join(v, dir))
				}
				continue
			case 2:
				os.RemoveAll(full)
				if err := os.MkdirAll(full, 0o755); err != nil {
					t.Fatal(err)
				}
				os.WriteFile(filepath.Join(full, "x.md"), []byte("---\ntype: Fact\ntitle: owner\n---\n"), 0o644)
			default:
				os.RemoveAll(full)
				body := "---\ntype: Fact\n" + statuses[rng.Intn(len(statuses))]
				if rng.Intn(4) != 0 {
					body += "title: " + strings.ToUpper(keys[rng.Intn(len(keys))]) + "\n"
				}
				if rng.Intn(3) == 0 {
					body += "subject: " + keys[rng.Intn(len(keys))] + "\n"
				}
				body += "---\nbody " + fmt.Sprint(rng.Int()) + "\n"
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			gitCLI(t, v, "add", "-A", "-f", "--", rel)
		}
		gitCLI(t, v, "-c", "user.name=Alice", "-c", "user.email=alice@example.com", "commit", "-q", "--allow-empty", "-m", "change")
		heads = append(heads, plumbing.NewHash(strings.TrimSpace(gitCLI(t, v, "rev-parse", "HEAD"))))
	}
	check := func(head plumbing.Hash) {
		hv, err := NewHeadView(r, head)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			got, err := hv.named(k)
			if err != nil {
				t.Fatal(err)
			}
			if want := vaultIndexWhole(t, r, head, k); !slices.Equal(got, want) {
				t.Fatalf("at %s, %q: the index says %v, the whole vault %v", head, k, got, want)
			}
		}
	}
	for _, h := range heads {
		check(h)
	}
	for i := 0; i < 80; i++ {
		check(heads[rng.Intn(len(heads))])
	}
}

// TestConflictIndexMovesByDifference: a commit that adds one note to a
// folder of 40 (two levels down) costs the index that one note. The index
// dropped every changed sub-folder and indexed it anew: each promotion into
// a folder of 20k notes read all of them again (50 ms of every review show
// and approval on the 100k-note vault).
func TestConflictIndexMovesByDifference(t *testing.T) {
	v := srcVault(t)
	notes := map[string]string{}
	for i := 0; i < 40; i++ {
		notes[fmt.Sprintf("20-domains/big/d0/n%02d.md", i)] = fmt.Sprintf("---\ntype: Fact\ntitle: Big note %d\n---\nbody %d\n", i, i)
	}
	humanCommit(t, v, notes)
	r := openRepo(t, v)
	named := func(k string) int {
		t.Helper()
		_, head, _ := r.Head()
		hv, err := NewHeadView(r, head)
		if err != nil {
			t.Fatal(err)
		}
		ns, err := hv.named(NormTitle(k))
		if err != nil {
			t.Fatal(err)
		}
		return len(ns)
	}
	added := func() int {
		vaultIndexes.Lock()
		defer vaultIndexes.Unlock()
		return vaultIndexes.m[r.GitDir()].added
	}
	if named("Big note 7") != 1 {
		t.Fatal("the folder's note is not indexed")
	}
	before := added()
	humanCommit(t, v, map[string]string{"20-domains/big/d0/n40.md": "---\ntype: Fact\ntitle: Big note 40\n---\nbody 40\n"})
	if named("Big note 40") != 1 || named("Big note 7") != 1 {
		t.Fatal("after the commit the index misses a note")
	}
	if n := added() - before; n != 1 {
		t.Errorf("one note added to the folder; the index read %d notes again, want 1", n)
	}
}

// Names of one subject in another spelling hold each other's place: the
// subject key folds word order, articles, "of"/"and" and look-alike
// letters; a number keeps its place and other prepositions stay.
func TestNameKey(t *testing.T) {
	same := [][2]string{
		{"CI test suite", "Suite of CI tests"},
		{"CI test suite", "Test suite, CI"},
		{"CI test suite", "Test suite СI"}, // Cyrillic С
		{"Deployment region", "Region and deployment"},
	}
	differ := [][2]string{
		{"Alpha 1 0", "Alpha 0 1"},
		{"From another uid", "Another uid"},
		{"Deployment region facts", "Deployment region"},
		{"CI test suite merge rule", "CI test suite"},
	}
	for _, p := range same {
		if a, b := nameKeyOf(NormTitle(p[0])), nameKeyOf(NormTitle(p[1])); a != b {
			t.Errorf("%q → %q, %q → %q; want one key", p[0], a, p[1], b)
		}
	}
	for _, p := range differ {
		if a, b := nameKeyOf(NormTitle(p[0])), nameKeyOf(NormTitle(p[1])); a == b {
			t.Errorf("%q and %q share the key %q; want two", p[0], p[1], a)
		}
	}
}
