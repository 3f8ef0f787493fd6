package decide

import (
	"testing"

	"github.com/fedmem/fedmem/gate/internal/vaulttest"
	"github.com/fedmem/fedmem/vault/repo"
)

// The vaults decide's tests read: real ones, read through vault/repo as the
// gate reads them (gate/internal/vaulttest). The names are the gate tests'
// (newVault, gitCLI, humanCommit), so a test moved here reads as it did.

func newVault(t *testing.T) string { return vaulttest.New(t) }

func gitCLI(t *testing.T, dir string, args ...string) string { return vaulttest.Git(t, dir, args...) }

func humanCommit(t *testing.T, v string, files map[string]string) string {
	return vaulttest.Commit(t, v, files)
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

// openRepo opens v for reading, as the gate does.
func openRepo(t *testing.T, v string) *repo.Repo { return vaulttest.Open(t, v) }
