// Package vaulttest makes the real vaults the gate's parts test against:
// vault/repo.Init and the Git CLI, with the repository opened as the gate
// reads it. For tests only (the gate's own tests have the same helpers in
// gate_test.go).
package vaulttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/vault/repo"
)

// New makes a vault (vault/repo.Init, reviewer alice) in a temporary folder.
func New(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "vault")
	if _, err := repo.Init(dir, repo.InitOptions{Reviewers: []string{"alice"}}); err != nil {
		t.Fatalf("init vault: %v", err)
	}
	return dir
}

// Git runs the Git CLI in dir, with no system or user configuration.
func Git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// Commit writes files (vault path → content) and commits them as a human
// (Alice); it returns the new HEAD.
func Commit(t testing.TB, v string, files map[string]string) string {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(v, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
		Git(t, v, "add", "--", p)
	}
	Git(t, v, "-c", "user.name=Alice", "-c", "user.email=alice@example.com", "commit", "-q", "-m", "human change")
	return strings.TrimSpace(Git(t, v, "rev-parse", "HEAD"))
}

// Open opens v's repository for reading.
func Open(t testing.TB, v string) *repo.Repo {
	t.Helper()
	r, err := repo.Open(v, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}
