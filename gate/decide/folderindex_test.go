package decide

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/fedmem/fedmem/test/testutil"
	"github.com/fedmem/fedmem/vault/repo"
)

// folderIndexWhole is the folder index built from the whole folder, as
// conflicts did before the index followed trees: the reference.
func folderIndexWhole(t *testing.T, r *repo.Repo, head plumbing.Hash, folder, k string) []string {
	t.Helper()
	hv, err := NewHeadView(r, head)
	if err != nil {
		t.Fatal(err)
	}
	e, err := hv.root.FindEntry(folder)
	if err != nil {
		return nil
	}
	tr, err := r.Tree(e.Hash)
	if err != nil {
		t.Fatal(err)
	}
	var titles, subjects []string
	for _, te := range tr.Entries {
		if !te.Mode.IsFile() || !strings.HasSuffix(te.Name, ".md") || te.Name == "index.md" || te.Name == "log.md" {
			continue
		}
		f, err := hv.Facts(te.Hash)
		if err != nil {
			t.Fatal(err)
		}
		if !f.InForce {
			continue
		}
		if f.Title == k {
			titles = append(titles, folder+"/"+te.Name)
		}
		if f.Subject == k {
			subjects = append(subjects, folder+"/"+te.Name)
		}
	}
	slices.Sort(titles)
	slices.Sort(subjects)
	return append(titles, subjects...)
}

// The folder index moves from tree to tree by their difference (notes
// added, changed to deprecated, retitled, removed, replaced by a folder),
// forwards and back to older commits (a group dropped after abortBatch
// leaves HEAD behind the trees the index saw): at every commit, in any
// order, it answers what an index of the whole folder answers.
func TestFolderIndexFollowsTrees(t *testing.T) {
	rng := testutil.Seed(t)
	v := newVault(t)
	r := openRepo(t, v)
	const folder = "20-domains"
	keys := []string{"deploy region", "rotation", "owner"}
	statuses := []string{"", "status: stable\n", "status: deprecated\n", "status: draft\n"}
	var heads []plumbing.Hash
	for c := 0; c < 25; c++ {
		for k := 0; k < 1+rng.Intn(4); k++ {
			name := fmt.Sprintf("n%d.md", rng.Intn(12))
			full := filepath.Join(v, folder, name)
			switch rng.Intn(6) {
			case 0: // remove the note (or the folder in its place)
				if _, err := os.Lstat(full); err == nil {
					gitCLI(t, v, "rm", "-q", "-r", "-f", "--", folder+"/"+name)
				}
				continue
			case 1: // a folder with the note's name
				os.RemoveAll(full)
				if err := os.MkdirAll(full, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(full, "x.md"), []byte("---\ntype: Fact\ntitle: owner\n---\n"), 0o644); err != nil {
					t.Fatal(err)
				}
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
			gitCLI(t, v, "add", "-A", "--", folder)
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
			got, err := hv.sameNamed(folder, k)
			if err != nil {
				t.Fatal(err)
			}
			if want := folderIndexWhole(t, r, head, folder, k); !slices.Equal(got, want) {
				t.Fatalf("at %s, %q: the index says %v, the whole folder %v", head, k, got, want)
			}
		}
	}
	for _, h := range heads { // forwards, one commit at a time
		check(h)
	}
	for i := 0; i < 60; i++ { // and in any order
		check(heads[rng.Intn(len(heads))])
	}
}
