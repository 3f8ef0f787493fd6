package gate

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
)

// Review ids by unique prefix. A decision id is a UTC time and a random
// tail (newClaimID: 20261130T150405.123456789Z-a1b2c3d4e5f6). A reviewer may
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

// resolveID turns what a reviewer typed into a full decision id. A full id
// that is recorded is returned as is. pendingOnly restricts the search to
// drafts held for review (approve, reject); otherwise every recorded
// decision counts (show, reverify). Errors wrap ErrNotPending (nothing
// matches), ErrAmbiguousID (several match) or say the prefix is too short.
func (g *Gate) resolveID(ref string, pendingOnly bool) (string, error) {
	if validClaimID(ref) {
		if d, err := g.loadDecision(ref); err == nil && d != nil {
			return ref, nil
		}
	}
	if len(ref) < MinIDPrefix {
		return "", fmt.Errorf("id prefix %q is too short: give at least %d characters of the id (fedmem review list shows them)", ref, MinIDPrefix)
	}
	if len(ref) > 64 || !idChars(ref) {
		return "", fmt.Errorf("%q: %w", clip(ref), ErrNotPending)
	}
	dir, ext := decisionsDir, ".json"
	if pendingOnly {
		dir, ext = pendingDir, ".draft"
	}
	ents, err := os.ReadDir(g.statePath(dir))
	if err != nil {
		return "", err
	}
	var cands []string
	for _, e := range ents {
		id, ok := strings.CutSuffix(e.Name(), ext)
		if !ok || !validClaimID(id) || !idMatches(id, ref) {
			continue
		}
		if pendingOnly {
			// Only what `review list` shows: held, not a duplicate
			// waiting on another draft's review.
			d, err := g.loadDecision(id)
			if err != nil || d == nil || d.State != StatePending || d.DuplicateOf != "" {
				continue
			}
		}
		cands = append(cands, id)
	}
	switch len(cands) {
	case 0:
		return "", fmt.Errorf("%q: %w", ref, ErrNotPending)
	case 1:
		return cands[0], nil
	}
	sort.Strings(cands)
	more := ""
	if len(cands) > maxCandidates {
		more = fmt.Sprintf(" and %d more", len(cands)-maxCandidates)
		cands = cands[:maxCandidates]
	}
	return "", fmt.Errorf("%w %q matches %s%s: type more of the id", ErrAmbiguousID, ref, strings.Join(cands, ", "), more)
}

// idMatches: ref is a prefix of the id or of its random tail.
func idMatches(id, ref string) bool {
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
