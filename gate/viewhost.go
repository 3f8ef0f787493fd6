package gate

import (
	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/vault/atomicfile"
	"github.com/fedmem/fedmem/vault/view"
)

// refreshView writes the sandbox's in-force view manifest (vault/view)
// for HEAD into the vault's .git when HEAD moved since it was last
// written: after each pass, review decision, sweep and sync. A failure is
// logged, never a pass's error: without a manifest at HEAD the launcher
// judges the vault's notes itself (slower, the same answer).
func (g *Gate) refreshView() {
	_, head, err := g.repo.Head()
	if err != nil || head.IsZero() || head.String() == g.viewAt {
		return
	}
	hv, err := decide.NewHeadView(g.repo, head)
	var m *view.Manifest
	if err == nil {
		m, err = hv.ViewManifest()
	}
	var b []byte
	if err == nil {
		m.Stamp(g.vaultDir) // the work tree as judged: the launcher checks it (view.Fresh)
		b, err = m.Encode()
	}
	if err == nil {
		// Not synced: a manifest lost to a crash is one not at HEAD.
		err = atomicfile.Write(g.repo.GitDir(), view.Path(g.vaultDir), b, 0o644, noSync{})
	}
	if err != nil {
		g.log.Warn("view manifest not written (sandboxes judge the vault's notes themselves)", "err", err)
		return
	}
	g.viewAt = head.String()
}

// noSync is an atomicfile.Later that syncs nothing.
type noSync struct{}

func (noSync) Add(string) {}
