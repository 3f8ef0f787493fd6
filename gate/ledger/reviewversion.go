package ledger

import (
	"errors"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/record"
	"github.com/fedmem/fedmem/gate/review"
)

// Resubmitted drafts and verifier outcomes in `review show` (issue 19 item
// 2). An agent that rewrites a held draft (the same file name in the same
// session) makes a new held decision; a reviewer who rejected a draft with
// "cite a source" sees the next version of it. show names the version it
// replaces — the latest earlier decision of the same session and draft
// name whose bytes the gate still holds: a held one (its pending copy), or
// one a reviewer rejected (endReview keeps its bytes as pending/ID.rejected)
// — and gives the unified diff from it to this draft: what changed since
// the version the reviewer saw.

// RejectedSuffix names the kept bytes of a draft a reviewer rejected.
const RejectedSuffix = ".rejected"

// versionIndex maps session and draft name to the decisions recorded for
// it, oldest first; built from one scan of decisions/ and kept up to date
// from the names that appear there (a decision's session, name and first
// sighting never change).
type versionIndex struct {
	known map[string]bool
	by    map[string][]versionEntry
}

type versionEntry struct {
	id    string
	first time.Time
}

var versionIndexes = struct {
	sync.Mutex
	m map[string]*versionIndex
}{m: map[string]*versionIndex{}}

func versionKey(session, draft string) string { return session + "\x00" + draft }

// draftVersions returns the decisions recorded for session/draft.
func (l *Ledger) draftVersions(session, draft string) ([]versionEntry, error) {
	ents, err := os.ReadDir(l.statePath(DecisionsDir))
	if err != nil {
		return nil, err
	}
	versionIndexes.Lock()
	defer versionIndexes.Unlock()
	idx := versionIndexes.m[l.state]
	if idx == nil {
		if len(versionIndexes.m) >= decide.MaxVaultIndexes {
			versionIndexes.m = map[string]*versionIndex{}
		}
		idx = &versionIndex{known: map[string]bool{}, by: map[string][]versionEntry{}}
		versionIndexes.m[l.state] = idx
	}
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !ValidID(id) || idx.known[id] {
			continue
		}
		d, err := l.Load(id)
		if err != nil || d == nil {
			continue // written meanwhile, or unreadable: looked at again next time
		}
		idx.known[id] = true
		k := versionKey(d.Session, d.Draft)
		idx.by[k] = append(idx.by[k], versionEntry{id, d.FirstSeen})
	}
	return idx.by[versionKey(session, draft)], nil
}

// PreviousVersion finds the version d replaces and diffs it against b (d's
// bytes); nil when there is none.
func (l *Ledger) PreviousVersion(d *record.Decision, b []byte) (*review.PreviousVersion, error) {
	vs, err := l.draftVersions(d.Session, d.Draft)
	if err != nil {
		return nil, err
	}
	var earlier []versionEntry
	for _, e := range vs {
		if e.id != d.ID && (e.first.Before(d.FirstSeen) || e.first.Equal(d.FirstSeen) && e.id < d.ID) {
			earlier = append(earlier, e)
		}
	}
	// The latest first; one whose bytes are gone (promoted, or rejected by
	// the gate's rules: no reviewer saw it) gives way to the one before.
	slices.SortFunc(earlier, func(x, y versionEntry) int {
		if c := y.first.Compare(x.first); c != 0 {
			return c
		}
		return strings.Compare(y.id, x.id)
	})
	for _, e := range earlier {
		old, err := l.Load(e.id)
		if err != nil {
			return nil, err
		}
		if old == nil {
			continue
		}
		name := e.id + ".draft"
		if old.State == decide.StateRejected {
			name = e.id + RejectedSuffix
		}
		ob, err := os.ReadFile(l.statePath(PendingDir, name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		return &review.PreviousVersion{ID: old.ID, State: old.State, Reviewer: old.Reviewer, Reason: old.ReviewReason, FirstSeen: old.FirstSeen,
			Diff: udiff.Unified("a/"+d.Draft+" ("+old.State+", "+old.ID+")", "b/"+d.Draft+" (this draft)", string(ob), string(b))}, nil
	}
	return nil, nil
}

// DropPending removes a decided draft's pending copy, but keeps the bytes of a draft a reviewer rejected, for the diff
// its resubmission shows; other decided drafts' pending copies go.
func (l *Ledger) DropPending(d *record.Decision) {
	p := l.statePath(PendingDir, d.ID+".draft")
	if d.State == decide.StateRejected && d.Reviewer != "" && d.DuplicateOf == "" {
		if err := os.Rename(p, l.statePath(PendingDir, d.ID+RejectedSuffix)); err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
	}
	os.Remove(p)
}

// VerifierOutcomes reads the verifiers' outcomes from the decision's
// reasons; the policy's verifiers for the type that left no outcome did
// not run (they run only on a draft nothing else holds).
func VerifierOutcomes(d *record.Decision, names []string) []review.VerifierOutcome {
	var out []review.VerifierOutcome
	ran := map[string]bool{}
	for _, f := range d.Reasons {
		var o string
		switch f.Rule {
		case decide.RuleVerifierPassed:
			o = "passed"
		case decide.RuleVerifierFailed:
			o = "failed"
		case decide.RuleVerifierTimeout:
			o = "timeout"
		default:
			continue
		}
		name := ""
		if rest, ok := strings.CutPrefix(f.Message, "approved verifier "); ok {
			name, _, _ = strings.Cut(rest, " ")
		}
		ran[name] = true
		out = append(out, review.VerifierOutcome{Name: name, Outcome: o, Detail: f.Message})
	}
	for _, n := range names {
		if !ran[n] {
			out = append(out, review.VerifierOutcome{Name: n, Outcome: "not run", Detail: "the policy's verifiers run only on a draft nothing else holds; this one was held before them"})
		}
	}
	return out
}
