package validate

import (
	"strings"
	"testing"

	"github.com/fedmem/fedmem/test/testutil"
)

// addedLinesSlow is addedLines without the append shortcut: the multiset
// difference over whole files, as it was before.
func addedLinesSlow(old, nw []byte) string { return lineDifference(old, nw) }

// The append shortcut gives exactly what the whole-file difference gives,
// on appends and on every other change (random pages of repeated, empty
// and unterminated lines).
func TestAddedLinesShortcutExact(t *testing.T) {
	rng := testutil.Seed(t)
	words := []string{"", "a", "b", "- x", "# Log", "a"}
	page := func(n int, end bool) string {
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(words[rng.Intn(len(words))])
			if i < n-1 || end {
				b.WriteByte('\n')
			}
		}
		return b.String()
	}
	for i := 0; i < 20000; i++ {
		old := page(rng.Intn(6), rng.Intn(4) != 0)
		var nw string
		switch rng.Intn(3) {
		case 0: // an append
			nw = old + page(rng.Intn(4), rng.Intn(2) == 0)
		case 1: // a rewrite
			nw = page(rng.Intn(8), rng.Intn(2) == 0)
		default: // an insertion in the middle
			k := rng.Intn(len(old) + 1)
			nw = old[:k] + page(rng.Intn(3), true) + old[k:]
		}
		if got, want := addedLines([]byte(old), []byte(nw)), addedLinesSlow([]byte(old), []byte(nw)); got != want {
			t.Fatalf("addedLines(%q, %q) = %q, the whole-file difference is %q", old, nw, got, want)
		}
	}
}

// A page that is not an append of HEAD's (a line inserted before the end,
// or HEAD's last line extended) is still scanned on what it adds: a key
// there refuses the commit.
func TestCommitScanNonAppendPage(t *testing.T) {
	key := "AKIAZ4XYQW7NJ2KPL5RB"
	note := []byte("---\ntype: Fact\ntitle: ok\n---\nok\n")
	for name, b := range map[string]Blob{
		"inserted":      {Path: "20-domains/log.md", Old: []byte("# Log\nold\n"), New: []byte("# Log\n- [Key " + key + "](ok.md)\nold\nnew\n")},
		"unterminated":  {Path: "20-domains/log.md", Old: []byte("# Log\n- [Key "), New: []byte("# Log\n- [Key " + key + "](ok.md)\n")},
		"appended":      {Path: "20-domains/log.md", Old: []byte("# Log\nold\n"), New: []byte("# Log\nold\n- [Key " + key + "](ok.md)\n")},
		"new-file-page": {Path: "20-domains/log/000001.md", Old: nil, New: []byte("# Log\nold\n- [Key " + key + "](ok.md)\n")},
	} {
		err := CheckCommit(note, "20-domains/ok.md", "m", b)
		if err == nil || !strings.Contains(err.Error(), "secret-commit-file") || !strings.Contains(err.Error(), b.Path) {
			t.Errorf("%s: a key in %s was not refused: %v", name, b.Path, err)
		}
	}
}
