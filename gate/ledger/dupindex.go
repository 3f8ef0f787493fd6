package ledger

import (
	"sync"

	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/record"
)

// dupIndex knows, for each held draft, the drafts held as its duplicates
// (the same bytes from another session, DuplicateOf = its id), so that a
// review settles them without reading every recorded decision: a batch of
// approvals was quadratic in the decisions (issue 19, docs/gate.md Known
// limits). It is built from one scan of the decisions the first time it is
// needed and kept up to date as duplicates are recorded; it is only a
// shortcut — an entry whose decision is not (yet) on disk is skipped, and
// Pending's orphan settling decides any duplicate it missed.
type dupIndex struct {
	mu     sync.Mutex
	loaded bool
	of     map[string]map[string]bool // original id -> duplicate ids
}

// AddDup records that draft dup is held as a duplicate of orig.
func (l *Ledger) AddDup(orig, dup string) { l.dups.add(orig, dup) }

// TakeDups returns and forgets the drafts held as duplicates of orig.
func (l *Ledger) TakeDups(orig string) ([]string, error) { return l.dups.take(orig, l.All) }

// add records that dup is held as a duplicate of orig (a no-op until the
// index is built: the scan will find it).
func (x *dupIndex) add(orig, dup string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.loaded {
		return
	}
	if x.of[orig] == nil {
		x.of[orig] = map[string]bool{}
	}
	x.of[orig][dup] = true
}

// take returns and forgets the duplicates of orig, building the index
// from load the first time.
func (x *dupIndex) take(orig string, load func() ([]record.Decision, error)) ([]string, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if !x.loaded {
		all, err := load()
		if err != nil {
			return nil, err
		}
		x.of = map[string]map[string]bool{}
		for _, d := range all {
			if d.State == decide.StatePending && d.DuplicateOf != "" {
				if x.of[d.DuplicateOf] == nil {
					x.of[d.DuplicateOf] = map[string]bool{}
				}
				x.of[d.DuplicateOf][d.ID] = true
			}
		}
		x.loaded = true
	}
	var ids []string
	for id := range x.of[orig] {
		ids = append(ids, id)
	}
	delete(x.of, orig)
	return ids, nil
}
