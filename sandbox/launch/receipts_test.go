package launch

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fedmem/fedmem/sandbox"
	"github.com/fedmem/fedmem/vault"
)

// TestVaultReadsBounded: the listed reads stop at MaxVaultReads entries
// or MaxVaultReadBytes of paths (the record must stay readable by the
// gate), count and digest cover every read, and the digest does not
// depend on the order reads were first seen.
func TestVaultReadsBounded(t *testing.T) {
	mk := func(n, pathLen int, reverse bool) *sandbox.VaultReads {
		vr := &sandbox.VaultReads{}
		for i := 0; i < n; i++ {
			j := i
			if reverse {
				j = n - 1 - i
			}
			p := fmt.Sprintf("10-projects/n%05d", j)
			p += strings.Repeat("x", max(0, pathLen-len(p)))
			vr.Reads = append(vr.Reads, sandbox.VaultRead{Path: p, First: time.Unix(int64(i), 0)})
		}
		return vr
	}
	out, _ := vaultReadsOf(mk(2500, 0, false), t.TempDir(), "", "")
	if !out.Truncated || len(out.Reads) != vault.MaxVaultReads || out.Count != 2500 {
		t.Errorf("2500 reads: truncated %v, listed %d, count %d", out.Truncated, len(out.Reads), out.Count)
	}
	rev, _ := vaultReadsOf(mk(2500, 0, true), t.TempDir(), "", "")
	if rev.Digest != out.Digest {
		t.Errorf("digest depends on the order of first opens: %s vs %s", rev.Digest, out.Digest)
	}
	long, _ := vaultReadsOf(mk(1000, 1000, false), t.TempDir(), "", "")
	if size := 0; !long.Truncated || len(long.Reads) >= 1000 {
		t.Errorf("1000 reads of 1000-byte paths: truncated %v, listed %d", long.Truncated, len(long.Reads))
	} else {
		for _, r := range long.Reads {
			size += len(r.Path)
		}
		if size > vault.MaxVaultReadBytes {
			t.Errorf("listed %d bytes of paths, bound %d", size, vault.MaxVaultReadBytes)
		}
	}
}

// TestBlobIDsByFolder: blob ids are those of `git ls-tree` for each path
// asked — at the root, in a folder, in a nested folder, with a space and
// a pathspec's magic characters in its name — and nothing else: a path
// not in the commit has none, a file beside an asked one is not listed,
// a folder's own entry is not a blob.
func TestBlobIDsByFolder(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"top.md": "t", "a/x.md": "x", "a/y.md": "y", "a/b/z.md": "z", "c/*[x] .md": "m", "c/other.md": "o"}
	for p, body := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-qm", "c")
	asked := []string{"top.md", "a/x.md", "a/b/z.md", "c/*[x] .md", "a/gone.md", "a/b"}
	ids, err := blobIDs(dir, "HEAD", asked)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, p := range asked[:4] {
		want[p] = git("rev-parse", "HEAD:"+p)
	}
	if fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Errorf("blob ids %v, want %v", ids, want)
	}
}
