package decide

import (
	"sort"
	"time"

	"github.com/fedmem/fedmem/vault/view"
)

// viewNote is what the in-force view needs of one note: why it is hidden
// ("" when in force) and when it goes stale (zero: never).
type viewNote struct {
	why   string
	stale time.Time
}

// ViewManifest is the manifest of the sandbox's in-force view at hv's
// commit (issue 21 item 3): every note, at any depth, not in force, and
// those in force until a stale_after. It reads no more than the conflict
// index does (the index follows HEAD by the difference of trees).
func (hv *HeadView) ViewManifest() (*view.Manifest, error) {
	m := &view.Manifest{Version: view.Version, Commit: hv.commit.String(), Hidden: []view.Entry{}}
	if hv.root == nil {
		return m, nil
	}
	vaultIndexes.Lock()
	defer vaultIndexes.Unlock()
	idx, err := hv.vaultIndexLocked()
	if err != nil {
		return nil, err
	}
	for p, v := range idx.view {
		if v.why != "" {
			m.Hidden = append(m.Hidden, view.Entry{Path: p, Why: v.why})
		} else {
			m.Stale = append(m.Stale, view.Stale{Path: p, After: v.stale})
		}
	}
	sort.Slice(m.Hidden, func(i, j int) bool { return m.Hidden[i].Path < m.Hidden[j].Path })
	sort.Slice(m.Stale, func(i, j int) bool { return m.Stale[i].Path < m.Stale[j].Path })
	return m, nil
}

// WithShown runs fn with the files the in-force view shows at hv's commit
// (ShownFile by path), the index held: fn must not keep the map or call
// back into the index.
func (hv *HeadView) WithShown(fn func(map[string]ShownFile) error) error {
	if hv.root == nil {
		return fn(map[string]ShownFile{})
	}
	vaultIndexes.Lock()
	defer vaultIndexes.Unlock()
	idx, err := hv.vaultIndexLocked()
	if err != nil {
		return err
	}
	return fn(idx.shown)
}
