package gate

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/fedmem/fedmem/gate/ledger"
	"github.com/fedmem/fedmem/gate/review"
)

// Batch reviews (issue 19): a reviewer decides many held drafts with one
// command — named by ids (unique prefixes, gate/ledger/reviewid.go) and narrowed by a
// filter — instead of one process and one socket round trip per draft.
// Each draft is still its own decision: approved drafts get one commit
// each, through the same Approve or RejectPending a single review uses, so
// a batch cannot decide anything a single review would not. The client
// first asks for the selection (op select), shows it and asks for
// confirmation, then sends exactly the full ids it showed: a draft that
// arrived in between is never decided on a filter the reviewer did not see.

// ErrNoMatch is returned when a filter selects no held draft.
var ErrNoMatch = errors.New("no held draft matches")

// Select resolves what a reviewer named to held drafts, oldest first, each
// once: every id (full or a unique prefix) must name a held draft, and the
// filter narrows the ids, or, with no ids, picks from every held draft.
// Neither ids nor a criterion is an error, and so is a selection that
// matches nothing (ErrNoMatch), an unknown, decided or ambiguous id
// (ErrNotPending, ErrAmbiguousID), or more than MaxBatch drafts.
func (g *Gate) Select(ids []string, f review.Filter) ([]Decision, error) {
	if len(ids) == 0 && !f.Criteria() {
		return nil, errors.New("name the drafts: give ids, or a filter (--session, --profile, --type, --risk), or --all for every held draft")
	}
	pending, err := g.Pending()
	if err != nil {
		return nil, err
	}
	var out []Decision
	if len(ids) == 0 {
		for _, d := range pending {
			if f.Match(d) {
				out = append(out, d)
			}
		}
	} else {
		held := make(map[string]Decision, len(pending))
		for _, d := range pending {
			held[d.ID] = d
		}
		seen := map[string]bool{}
		g.mu.Lock()
		for _, ref := range ids {
			id, err := g.ledger.Resolve(ref, true)
			if err != nil {
				g.mu.Unlock()
				return nil, err
			}
			d, ok := held[id]
			if !ok {
				g.mu.Unlock()
				return nil, fmt.Errorf("%q: %w", ref, ErrNotPending)
			}
			if !seen[id] && f.Match(d) {
				seen[id] = true
				out = append(out, d)
			}
		}
		g.mu.Unlock()
		sort.SliceStable(out, func(i, j int) bool { return out[i].FirstSeen.Before(out[j].FirstSeen) })
	}
	if len(out) == 0 {
		what := f.String()
		if len(ids) > 0 {
			what = fmt.Sprintf("%d id(s) and %s", len(ids), what)
		}
		return nil, fmt.Errorf("%w %s (fedmem review list shows what is held)", ErrNoMatch, what)
	}
	if len(out) > review.MaxBatch {
		return nil, fmt.Errorf("%d drafts selected; one batch decides at most %d: narrow the filter", len(out), review.MaxBatch)
	}
	return out, nil
}

// RejectAll rejects each id in turn with one reason.
func (g *Gate) RejectAll(ids []string, reviewer, reason string) []review.BatchItem {
	return g.batch(ids, func(id string) (*Decision, error) { return g.RejectPending(id, reviewer, reason) })
}

func (g *Gate) batch(ids []string, one func(string) (*Decision, error)) []review.BatchItem {
	out := make([]review.BatchItem, 0, len(ids))
	for _, id := range ids {
		d, err := one(id)
		it := review.BatchItem{ID: id, Decision: d}
		if err != nil {
			it.Error = err.Error()
		}
		out = append(out, it)
	}
	return out
}

// ShortIDs gives each of ids the shortest prefix of its random tail (at
// least MinIDPrefix characters) that names it alone among every recorded
// decision, as `git log --abbrev-commit` does: what `review list` shows and
// what resolveID accepts back.
func (g *Gate) ShortIDs(ids []string) (map[string]string, error) {
	ents, err := os.ReadDir(g.statePath(decisionsDir))
	if err != nil {
		return nil, err
	}
	var all []string
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), ".json"); ok && ledger.ValidID(id) {
			all = append(all, id)
		}
	}
	out := make(map[string]string, len(ids))
	for _, id := range ids {
		out[id] = shortID(id, all)
	}
	return out, nil
}

// shortID is the shortest tail prefix of id that matches no other id of
// all (by idMatches, the rule resolveID applies); the full id when none is.
func shortID(id string, all []string) string {
	i := strings.LastIndexByte(id, '-')
	if i < 0 {
		return id
	}
	tail := id[i+1:]
	for n := MinIDPrefix; n <= len(tail); n++ {
		p := tail[:n]
		unique := true
		for _, o := range all {
			if o != id && ledger.IDMatches(o, p) {
				unique = false
				break
			}
		}
		if unique {
			return p
		}
	}
	return id
}
