package gitindex

import (
	"crypto/sha1"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The tests drive the real git CLI: it writes the indexes Apply reads, and
// it must accept (status clean, ls-files right, fsck --strict) every index
// Apply writes.

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "core.fsync=none"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func newRepo(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, fmt.Sprintf("d%02d", i%7), fmt.Sprintf("n%04d.md", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(fmt.Sprintf("note %d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "base")
	return dir
}

func blobHash(b []byte) [20]byte {
	return sha1.Sum(append([]byte(fmt.Sprintf("blob %d\x00", len(b))), b...))
}

// put writes files into the work tree and records them with Apply, the way
// the gate does (shared file first, then the index).
func put(t *testing.T, dir string, opt Options, files map[string]string, dels ...string) *Update {
	t.Helper()
	var puts []Entry
	for name, body := range files {
		full := filepath.Join(dir, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(full)
		if err != nil {
			t.Fatal(err)
		}
		h := blobHash([]byte(body))
		if got := strings.TrimSpace(git(t, dir, "hash-object", "-w", name)); got != fmt.Sprintf("%x", h) {
			t.Fatalf("hash of %s: git %s, ours %x", name, got, h)
		}
		puts = append(puts, FromFile(name, h, fi))
	}
	for _, d := range dels {
		os.Remove(filepath.Join(dir, filepath.FromSlash(d)))
	}
	gitDir := filepath.Join(dir, ".git")
	raw, err := os.ReadFile(filepath.Join(gitDir, "index"))
	if err != nil {
		t.Fatal(err)
	}
	u, err := Apply(gitDir, raw, puts, dels, opt)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if err := WriteShared(gitDir, u, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gitDir, "index"), u.Index, 0o644); err != nil {
		t.Fatal(err)
	}
	return u
}

// checkClean: Git finds the work tree and index in step with HEAD, and
// the repository sound.
func checkClean(t *testing.T, dir string) {
	t.Helper()
	if st := git(t, dir, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Fatalf("git status not clean:\n%s", st)
	}
	git(t, dir, "fsck", "--strict", "--no-progress")
}

func TestSplitFastPathAndGitAcceptsIt(t *testing.T) {
	dir := newRepo(t, 300)
	gitDir := filepath.Join(dir, ".git")
	opt := Options{Split: true, MaxDelta: 8}

	u := put(t, dir, opt, map[string]string{"d00/new-1.md": "one\n"})
	if !u.Full || u.Shared == nil {
		t.Fatalf("first split: Full=%v shared=%v, want a full write of a new shared index", u.Full, u.Shared != nil)
	}
	if len(u.Index) > 200 {
		t.Fatalf("split part is %d bytes, want only the link", len(u.Index))
	}
	git(t, dir, "commit", "-q", "-m", "one")
	checkClean(t, dir)
	if got := git(t, dir, "ls-files", "d00/new-1.md"); got != "d00/new-1.md\n" {
		t.Fatalf("ls-files = %q", got)
	}

	// Small changes: only the split part is rewritten; an existing path
	// (in the shared file) is replaced by its new entry.
	for i := 2; i <= 5; i++ {
		u = put(t, dir, opt, map[string]string{fmt.Sprintf("d01/new-%d.md", i): "x\n", "d02/n0002.md": fmt.Sprintf("edit %d\n", i)})
		if u.Full || u.Shared != nil {
			t.Fatalf("change %d: full rewrite, want the split part only", i)
		}
		git(t, dir, "commit", "-q", "-m", fmt.Sprintf("c%d", i))
		checkClean(t, dir)
	}
	if got := git(t, dir, "ls-files"); strings.Count(got, "\n") != 305 {
		t.Fatalf("ls-files lists %d paths, want 305", strings.Count(got, "\n"))
	}

	// Git writes the index itself in between (keeps it split, may add
	// replace/delete bitmaps); Apply builds on what Git wrote.
	os.WriteFile(filepath.Join(dir, "d03/n0003.md"), []byte("cli edit\n"), 0o644)
	git(t, dir, "add", "d03/n0003.md")
	git(t, dir, "rm", "-q", "d04/n0004.md")
	git(t, dir, "commit", "-q", "-m", "cli")
	checkClean(t, dir)
	put(t, dir, opt, map[string]string{"d05/after-cli.md": "y\n"})
	git(t, dir, "commit", "-q", "-m", "after cli")
	checkClean(t, dir)

	// Past MaxDelta: merged into a new shared file; the old one is kept
	// (the replaced index named it), none is lost.
	// A shared file no index names, untouched for an hour, goes with the
	// merge; the one the replaced index named stays.
	dead := filepath.Join(gitDir, "sharedindex.0000000000000000000000000000000000000000")
	os.WriteFile(dead, []byte("old"), 0o644)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(dead, old, old)
	var last *Update
	for i := 0; i < 10 && (last == nil || last.Shared == nil); i++ {
		last = put(t, dir, opt, map[string]string{fmt.Sprintf("d06/more-%d.md", i): "z\n"})
		git(t, dir, "commit", "-q", "-m", "more")
	}
	if last.Shared == nil {
		t.Fatal("no merge into a new shared file after 10 changes with MaxDelta 8")
	}
	checkClean(t, dir)
	for _, keep := range []string{last.SharedName, last.Replaced} {
		if _, err := os.Stat(filepath.Join(gitDir, keep)); err != nil {
			t.Fatalf("shared file %q: %v", keep, err)
		}
	}
	if _, err := os.Stat(dead); err == nil {
		t.Fatal("an unused shared file an hour old was kept")
	}

	// A removal goes through the full merge; Git agrees the path is gone.
	put(t, dir, opt, nil, "d00/n0000.md")
	git(t, dir, "commit", "-q", "-m", "rm")
	checkClean(t, dir)
	if got := git(t, dir, "ls-files", "d00/n0000.md"); got != "" {
		t.Fatalf("removed path still listed: %q", got)
	}
}

// A split index Git wrote with replace and delete bitmaps merges to the
// same entries Git lists, written plain (Split false).
func TestMergeGitSplitIndexToPlain(t *testing.T) {
	dir := newRepo(t, 200)
	git(t, dir, "update-index", "--split-index")
	os.WriteFile(filepath.Join(dir, "d01/n0001.md"), []byte("changed\n"), 0o644)
	git(t, dir, "add", "d01/n0001.md")
	git(t, dir, "rm", "-q", "d02/n0002.md")
	os.WriteFile(filepath.Join(dir, "d03/zz.md"), []byte("new\n"), 0o644)
	git(t, dir, "add", "d03/zz.md")
	want := git(t, dir, "ls-files", "-s")
	raw, _ := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if SharedName(raw) == "" {
		t.Fatal("git did not write a split index")
	}
	u, err := Apply(filepath.Join(dir, ".git"), raw, nil, nil, Options{Split: false})
	if err != nil {
		t.Fatal(err)
	}
	if SharedName(u.Index) != "" {
		t.Fatal("Split false wrote a split index")
	}
	os.WriteFile(filepath.Join(dir, ".git", "index"), u.Index, 0o644)
	if got := git(t, dir, "ls-files", "-s"); got != want {
		t.Fatalf("ls-files -s after merge:\n%s\nwant:\n%s", got, want)
	}
	git(t, dir, "commit", "-q", "-m", "x")
	checkClean(t, dir)
}

// Index version 4 (path compression, feature.manyFiles) is read; the
// result is version 2 and Git reads it.
func TestVersion4(t *testing.T) {
	dir := newRepo(t, 120)
	git(t, dir, "update-index", "--index-version", "4")
	want := git(t, dir, "ls-files", "-s")
	u := put(t, dir, Options{Split: true}, map[string]string{"d00/v4.md": "v4\n"})
	if u.Shared == nil {
		t.Fatal("no shared index written")
	}
	got := git(t, dir, "ls-files", "-s")
	if !strings.Contains(got, "d00/v4.md") || strings.Count(got, "\n") != strings.Count(want, "\n")+1 {
		t.Fatalf("ls-files -s after v4 split:\n%s", got)
	}
	git(t, dir, "commit", "-q", "-m", "v4")
	checkClean(t, dir)
}

// A torn index is an error naming the file, never a guess.
func TestTornIndexIsAnError(t *testing.T) {
	dir := newRepo(t, 10)
	raw, _ := os.ReadFile(filepath.Join(dir, ".git", "index"))
	raw[len(raw)/2] ^= 0xff
	_, err := Apply(filepath.Join(dir, ".git"), raw, nil, nil, Options{Split: true})
	if err == nil || !strings.Contains(err.Error(), "checksum") || !strings.Contains(err.Error(), "index") {
		t.Fatalf("err = %v, want a checksum error naming the index", err)
	}
}
