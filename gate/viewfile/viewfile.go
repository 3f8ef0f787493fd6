// Package viewfile writes the sandbox's in-force view for a commit into
// the vault's .git: the manifest (vault/view: what is not in force and
// why) and the view tree the sandbox's overlay shows (the files in force,
// written from the commit's objects): the gate's side of
// `vault.view: in-force` (docs/gate.md, "The in-force view").
package viewfile

import (
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/vault/atomicfile"
	"github.com/fedmem/fedmem/vault/repo"
	"github.com/fedmem/fedmem/vault/view"
)

// Write brings the view tree to head and writes the manifest of head:
// the notes the conflict index (which follows HEAD by tree differences)
// finds not in force. The tree is moved from the commit the last manifest
// names by the difference of their trees (a whole rebuild without one).
// The manifest is written last and names the tree's commit only when the
// tree reached head: a crash in between leaves a manifest not at HEAD, and
// the launcher then judges the notes itself. Not synced, for the same
// reason. A tree that could not be brought to head is an error, and the
// manifest then names no tree (the launcher judges the notes itself).
func Write(r *repo.Repo, vaultDir string, head repo.Hash) error {
	hv, err := decide.NewHeadView(r, head)
	if err != nil {
		return err
	}
	m, err := hv.ViewManifest()
	if err != nil {
		return err
	}
	// A name Git refuses (`..`, a path that is not clean) is never in the
	// tree, and a manifest naming it could not be read back: left out.
	clean := m.Hidden[:0]
	for _, e := range m.Hidden {
		if view.CleanRel(e.Path) {
			clean = append(clean, e)
		}
	}
	m.Hidden = clean
	var prev repo.Hash
	var before map[string][]string
	kept := map[string]bool{}
	if old, err := view.Load(vaultDir); err == nil && old.Tree != "" {
		prev = repo.NewHash(old.Tree)
		before = newJudged(old).names
		for _, e := range old.Hidden {
			if e.Why == view.KeptWhy {
				kept[e.Path] = true
			}
		}
	}
	// The old manifest goes first: while the tree moves no launcher may
	// take it for the old commit's.
	var terr error
	if prev != head {
		terr = removeManifest(vaultDir)
		if terr == nil {
			terr = hv.WithShown(func(shown map[string]decide.ShownFile) error {
				j := newJudged(m)
				j.before, j.kept, j.now = before, kept, time.Now()
				j.keep()
				err := syncTree(r, view.TreeDir(vaultDir), prev, head, j, shown)
				kept = j.kept
				return err
			})
		}
	}
	// Every path the tree keeps is hidden from the next sessions, with
	// the reason (and carried to the next manifest); those gone from it
	// are not.
	var keptPaths []string
	for p := range kept {
		if _, err := os.Lstat(filepath.Join(view.TreeDir(vaultDir), filepath.FromSlash(p))); err == nil {
			keptPaths = append(keptPaths, p)
		}
	}
	sort.Strings(keptPaths)
	for _, p := range keptPaths {
		m.Hidden = append(m.Hidden, view.Entry{Path: p, Why: view.KeptWhy})
	}
	sort.SliceStable(m.Hidden, func(a, b int) bool { return m.Hidden[a].Path < m.Hidden[b].Path })
	if terr == nil {
		m.Tree = head.String()
	}
	b, err := m.Encode()
	if err != nil {
		return err
	}
	if err := atomicfile.Write(r.GitDir(), view.Path(vaultDir), b, 0o644, noSync{}); err != nil {
		return err
	}
	return terr
}

// noSync is an atomicfile.Later that syncs nothing.
type noSync struct{}

func (noSync) Add(string) {}

// newJudged is m as the tree needs it.
func newJudged(m *view.Manifest) *judged {
	paths := make([]string, len(m.Hidden))
	for i, e := range m.Hidden {
		paths[i] = e.Path
	}
	stale := make(map[string]time.Time, len(m.Stale))
	for _, st := range m.Stale {
		stale[st.Path] = st.After
	}
	return &judged{hidden: hiddenSet(m), names: view.PagesOf(paths), hiddenPaths: paths, kept: map[string]bool{}, stale: stale, now: time.Now()}
}

// hiddenSet says whether a path is hidden at the manifest's commit: it or
// a folder above it is one of m's hidden entries (stale notes are in
// force until their time: the tree holds them, the launcher hides them
// once stale).
func hiddenSet(m *view.Manifest) func(string) bool {
	set := make(map[string]bool, len(m.Hidden))
	for _, e := range m.Hidden {
		set[e.Path] = true
	}
	set[view.ArchiveDir] = true // retired notes: never in force
	return func(p string) bool { return view.Within(set, p) }
}
