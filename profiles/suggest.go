package profiles

import (
	"fmt"
	"strings"
)

// suggestKey returns ` (did you mean "k"?)` for the known key closest to
// got, or "" when none is close (at most a third of its letters differ).
func suggestKey(got string, known []string) string {
	best := Nearest(got, known)
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// Nearest returns the entry of known closest to got, or "" when none is
// close (fewer than a third of got's letters plus one differ). Letter case
// does not count (`decison` is near `Decision`); of two as close, the first
// in known wins, so a caller with a sorted list gets a stable answer.
func Nearest(got string, known []string) string {
	best, bestD := "", len(got)/3+1
	lg := strings.ToLower(got)
	for _, k := range known {
		if d := EditDistance(lg, strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// EditDistance is the edit distance between a and b (bytes) where a swap of
// two neighbouring letters counts as one edit, like an insertion, a deletion
// or a substitution (optimal string alignment: `titel` is one edit from
// `title`, `tpye` from `type`): the one did-you-mean measure of fedmem and
// fedmem-run (profile keys, commands, flags, profile names, draft fields
// and types).
func EditDistance(a, b string) int {
	// Three rows: the swap looks two rows back.
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
