package repo

import (
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
)

// SharedBytesBreaches checks every object the repository holds in memory
// with shared bytes (the raw tree cache, both generations; the recent
// objects of its packs; the open batch's objects): each must still hash to
// its id, or a reader changed what it was lent. It returns one line per
// breach (none: nil). Red-team tests call it after bursts.
func (g *Repo) SharedBytesBreaches() []string {
	var out []string
	g.cache.mu.Lock()
	for _, m := range []map[plumbing.Hash][]byte{g.cache.trees, g.cache.old} {
		for h, raw := range m {
			if plumbing.ComputeHash(plumbing.TreeObject, raw) != h {
				out = append(out, fmt.Sprintf("BREACH cached tree %s changed after it was cached", h))
			}
		}
	}
	g.cache.mu.Unlock()
	check := func(where string, objs map[plumbing.Hash]plumbing.EncodedObject) {
		for h, o := range objs {
			if ro, ok := o.(*rawObj); ok && plumbing.ComputeHash(ro.t, ro.b) != h {
				out = append(out, fmt.Sprintf("BREACH %s object %s changed after it was made", where, h))
			}
		}
	}
	s := g.s
	if ov, ok := s.(overlay); ok {
		check("group", ov.b.objs)
		s = ov.Storer
	}
	if ri, ok := s.(*reindexing); ok {
		ri.mu.Lock()
		check("recent", ri.recent)
		ri.mu.Unlock()
	} else {
		out = append(out, fmt.Sprintf("the storer is %T, not the reindexing one: nothing recent checked", s))
	}
	return out
}
