package gate

import "github.com/fedmem/fedmem/gate/viewfile"

// refreshView writes the sandbox's in-force view manifest for HEAD when
// HEAD moved since it was last written (gate/viewfile): after each pass,
// review decision, sweep and sync. A failure is logged, never a pass's
// error: without a manifest at HEAD the launcher judges the notes itself.
func (g *Gate) refreshView() {
	_, head, err := g.repo.Head()
	if err != nil || head.IsZero() || head.String() == g.viewAt {
		return
	}
	if err := viewfile.Write(g.repo, g.vaultDir, head); err != nil {
		g.log.Warn("view manifest not written (sandboxes judge the vault's notes themselves)", "err", err)
		return
	}
	g.viewAt = head.String()
}
