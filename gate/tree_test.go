package gate

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"
)

// Raw tree splicing must keep Git's entry order (a folder sorts as if its
// name ended in '/') in every tricky neighbourhood, or fsck --strict fails.
func TestTreeSpliceOrder(t *testing.T) {
	v := newVault(t)
	for _, f := range []string{"20-domains/foo-bar.md", "20-domains/foo/x.md", "20-domains/foo.md", "20-domains/foo0.md", "20-domains/a/b/c.md"} {
		p := filepath.Join(v, f)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(f+"\n"), 0o644)
	}
	gitCLI(t, v, "add", "20-domains")
	gitCLI(t, v, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "-m", "setup")
	r, err := openRepo(v, filepath.Join(t.TempDir(), "intent"))
	if err != nil {
		t.Fatal(err)
	}
	adds := []string{"20-domains/foo/y.md", "20-domains/foo.a.md", "20-domains/fo.md", "20-domains/zzz.md", "20-domains/foo/x.md",
		"20-domains/new/dir/x.md", "20-domains/a/b/a.md", "20-domains/a/b-c.md", "00-global/z.md", "top.md"}
	branch, head, err := r.Head()
	if err != nil {
		t.Fatal(err)
	}
	var ch []change
	for _, a := range adds {
		ch = append(ch, change{Path: a, Content: []byte("new " + a + "\n")})
	}
	sig := object.Signature{Name: "g", Email: "g@g", When: time.Now()}
	if _, err := r.CommitChanges(branch, head, ch, sig, "splice\n"); err != nil {
		t.Fatal(err)
	}
	if err := r.Checkout(ch); err != nil {
		t.Fatal(err)
	}
	checkRepo(t, v)
	files := strings.Fields(gitCLI(t, v, "ls-tree", "-r", "--name-only", "HEAD"))
	have := map[string]bool{}
	for _, f := range files {
		have[f] = true
	}
	for _, want := range append(adds, "20-domains/foo-bar.md", "20-domains/foo.md", "20-domains/foo0.md", "20-domains/a/b/c.md") {
		if !have[want] {
			t.Errorf("%s missing from the tree", want)
		}
	}
	if !sort.StringsAreSorted(files) {
		t.Logf("ls-tree order is Git's, not byte order; fsck checked it")
	}
	if got := gitCLI(t, v, "show", "HEAD:20-domains/foo/x.md"); got != "new 20-domains/foo/x.md\n" {
		t.Errorf("replace: %q", got)
	}
	// A file where a folder exists (and vice versa) is refused, not corrupted.
	branch, head, _ = r.Head()
	if _, err := r.CommitChanges(branch, head, []change{{Path: "20-domains/foo", Content: []byte("x")}}, sig, "bad\n"); err == nil {
		t.Error("file over a folder accepted")
	}
	if _, err := r.CommitChanges(branch, head, []change{{Path: "20-domains/foo.md/x.md", Content: []byte("x")}}, sig, "bad\n"); err == nil {
		t.Error("folder over a file accepted")
	}
}
