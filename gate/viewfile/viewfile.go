// Package viewfile writes the sandbox's in-force view manifest
// (vault/view) for a commit into the vault's .git: the gate's side of
// `vault.view: in-force` (docs/gate.md, "The in-force view's manifest").
package viewfile

import (
	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/vault/atomicfile"
	"github.com/fedmem/fedmem/vault/repo"
	"github.com/fedmem/fedmem/vault/view"
)

// Write writes the manifest of head: the notes the conflict index (which
// follows HEAD by tree differences) finds not in force, the work tree's
// folders stamped as they are now. Not synced: a manifest lost to a crash
// is one not at HEAD, and the launcher then judges the notes itself.
func Write(r *repo.Repo, vaultDir string, head repo.Hash) error {
	hv, err := decide.NewHeadView(r, head)
	if err != nil {
		return err
	}
	m, err := hv.ViewManifest()
	if err != nil {
		return err
	}
	m.Stamp(vaultDir) // the work tree as judged: the launcher checks it (view.Fresh)
	b, err := m.Encode()
	if err != nil {
		return err
	}
	return atomicfile.Write(r.GitDir(), view.Path(vaultDir), b, 0o644, noSync{})
}

// noSync is an atomicfile.Later that syncs nothing.
type noSync struct{}

func (noSync) Add(string) {}
