package profiles

import "fmt"

// suggestKey returns ` (did you mean "k"?)` for the known key closest to
// got, or "" when none is close (at most a third of its letters differ).
func suggestKey(got string, known []string) string {
	best, bestD := "", len(got)/3+1
	for _, k := range known {
		if d := EditDistance(got, k); d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// EditDistance is the Levenshtein distance between a and b (bytes): the
// one did-you-mean measure of fedmem and fedmem-run (profile keys, commands,
// flags, profile names).
func EditDistance(a, b string) int {
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
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
