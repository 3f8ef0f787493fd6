package decide

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/vault/repo"
)

// The vaults decide's tests read: real ones (vault/repo.Init, git), read through
// vault/repo as the gate reads them. newVault, gitCLI and humanCommit are
// the gate tests' (gate_test.go, evidence_test.go).

func newVault(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "vault")
	if _, err := repo.Init(dir, repo.InitOptions{Reviewers: []string{"alice"}}); err != nil {
		t.Fatalf("init vault: %v", err)
	}
	return dir
}

func gitCLI(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// srcVault is newVault with the source note the gate tests' trustVault
// commits (10-projects/src.md); the policy trustVault writes beside it is
// no input of the indexes tested here.
func srcVault(t *testing.T) string {
	t.Helper()
	v := newVault(t)
	humanCommit(t, v, map[string]string{"10-projects/src.md": "---\ntype: Reference\ntitle: Source\n---\nThe system as it is.\n"})
	return v
}

func humanCommit(t *testing.T, v string, files map[string]string) string {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(v, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
		gitCLI(t, v, "add", "--", p)
	}
	gitCLI(t, v, "-c", "user.name=Alice", "-c", "user.email=alice@example.com", "commit", "-q", "-m", "human change")
	return strings.TrimSpace(gitCLI(t, v, "rev-parse", "HEAD"))
}

// openRepo opens v for reading, as the gate does.
func openRepo(t *testing.T, v string) *repo.Repo {
	t.Helper()
	r, err := repo.Open(v, repo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}
