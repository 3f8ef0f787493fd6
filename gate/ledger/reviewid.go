package ledger

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/record"
)

// Review ids by unique prefix. A decision id is a UTC time and a random
// tail (NewID: 20261130T150405.123456789Z-a1b2c3d4e5f6). A reviewer may
// type any unique prefix of the whole id or of its random tail, as Git takes
// an abbreviated object name: `fedmem review approve a1b2`. A prefix that
// names more than one decision is an error listing them; nothing is ever
// decided on a guess.

// MinIDPrefix is the shortest prefix a reviewer may type.
const MinIDPrefix = 4

// ErrAmbiguousID is returned when a prefix names more than one decision.
var ErrAmbiguousID = errors.New("ambiguous id prefix")

// maxCandidates bounds the candidates an ambiguity error lists.
const maxCandidates = 10

// Resolve turns what a reviewer typed into a full decision id. A full id
// that is recorded is returned as is. A prefix is always resolved among
// every recorded decision, held and decided alike, so a prefix never moves
// to another draft: once the draft it named is decided, it still names that
// draft (as Git's abbreviated names never move to another object). For
// approve and reject (pendingOnly) a unique match that is no longer held is
// refused, saying when it was decided, rather than letting the prefix pick
// the next held draft. Errors wrap ErrNotPending (nothing matches, or the
// match is decided), ErrAmbiguousID (several match) or say the prefix is
// too short.
func (l *Ledger) Resolve(ref string, pendingOnly bool) (string, error) {
	if ValidID(ref) {
		if d, err := l.Load(ref); err == nil && d != nil {
			return ref, nil
		}
	}
	if len(ref) < MinIDPrefix {
		return "", fmt.Errorf("id prefix %q is too short: give at least %d characters of the id (fedmem review list shows them)", ref, MinIDPrefix)
	}
	if len(ref) > 64 || !idChars(ref) {
		return "", fmt.Errorf("%q: %w", decide.Clip(ref), ErrNotPending)
	}
	ents, err := os.ReadDir(l.statePath(DecisionsDir))
	if err != nil {
		return "", err
	}
	var cands []string
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !ValidID(id) || !IDMatches(id, ref) {
			continue
		}
		cands = append(cands, id)
	}
	switch len(cands) {
	case 0:
		return "", fmt.Errorf("%q: %w", ref, ErrNotPending)
	case 1:
		id := cands[0]
		if pendingOnly {
			d, err := l.Load(id)
			if err != nil {
				return "", err
			}
			if d == nil || d.State != decide.StatePending || d.DuplicateOf != "" {
				return "", fmt.Errorf("%q names %s, %s: %w; use the full id of the draft you mean", ref, id, decidedAt(d), ErrNotPending)
			}
		}
		return id, nil
	}
	sort.Strings(cands)
	more := ""
	if len(cands) > maxCandidates {
		more = fmt.Sprintf(" and %d more", len(cands)-maxCandidates)
		cands = cands[:maxCandidates]
	}
	return "", fmt.Errorf("%w %q matches %s%s: type more of the id", ErrAmbiguousID, ref, strings.Join(cands, ", "), more)
}

// decidedAt says what became of a decision that is not held for review.
func decidedAt(d *record.Decision) string {
	switch {
	case d == nil:
		return "not recorded"
	case d.State == decide.StatePending && d.DuplicateOf != "":
		return "a duplicate waiting on " + d.DuplicateOf
	}
	at := d.Decided
	if !d.Reviewed.IsZero() {
		at = d.Reviewed
	}
	s := "already " + d.State
	if !at.IsZero() {
		s += " at " + at.UTC().Format("2006-01-02T15:04:05Z")
	}
	if d.Reviewer != "" {
		s += " by " + d.Reviewer
	}
	return s
}

// IDMatches: ref is a prefix of the id or of its random tail.
func IDMatches(id, ref string) bool {
	if strings.HasPrefix(id, ref) {
		return true
	}
	i := strings.LastIndexByte(id, '-')
	return i >= 0 && strings.HasPrefix(id[i+1:], ref)
}

func idChars(s string) bool {
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '.' || r == '-') {
			return false
		}
	}
	return true
}
