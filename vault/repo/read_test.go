package repo

import (
	"strings"
	"testing"

	"github.com/fedmem/fedmem/vault/repo/repotest"
)

// gitOut runs git in dir and returns its trimmed output.
func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := repotest.Git(dir, append([]string{"-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(out)
}

// TestMergeBase: on first-parent chains MergeBase finds the fork point and
// each side's commits above it (newest first), the tip itself when one
// side is behind, and refuses two histories that share nothing.
func TestMergeBase(t *testing.T) {
	dir := t.TempDir()
	gitOut(t, dir, "init", "-q", "-b", "main")
	commit := func(msg string) Hash {
		gitOut(t, dir, "commit", "-q", "--allow-empty", "-m", msg)
		return NewHash(gitOut(t, dir, "rev-parse", "HEAD"))
	}
	base := commit("base")
	a1, a2 := commit("a1"), commit("a2")
	gitOut(t, dir, "checkout", "-q", "-b", "other", base.String())
	b1 := commit("b1")
	gitOut(t, dir, "checkout", "-q", "--orphan", "lone")
	lone := commit("lone")
	r, err := OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, aSide, bSide, err := r.MergeBase(a2, b1, 100)
	if err != nil || got != base || len(aSide) != 2 || aSide[0] != a2 || aSide[1] != a1 || len(bSide) != 1 || bSide[0] != b1 {
		t.Errorf("diverged: base %s a %v b %v err %v; want %s [%s %s] [%s]", got, aSide, bSide, err, base, a2, a1, b1)
	}
	if got, aSide, bSide, err := r.MergeBase(a2, base, 100); err != nil || got != base || len(aSide) != 2 || len(bSide) != 0 {
		t.Errorf("behind: base %s a %v b %v err %v; want %s", got, aSide, bSide, err, base)
	}
	if _, _, _, err := r.MergeBase(a2, lone, 100); err == nil {
		t.Errorf("unrelated histories: no error")
	}
	if got, aSide, _, err := r.MergeBase(a2, ZeroHash, 100); err != nil || !got.IsZero() || len(aSide) != 3 {
		t.Errorf("against nothing: base %s a %v err %v; want zero and 3 commits", got, aSide, err)
	}
	if p, err := r.FirstParent(a1); err != nil || p != base {
		t.Errorf("FirstParent(a1) = %s %v, want %s", p, err, base)
	}
}
