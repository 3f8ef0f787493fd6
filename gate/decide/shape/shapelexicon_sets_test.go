package shape

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// The sorted lists hold exactly the keys the lexicon's maps held (each
// word NormWord-folded, names apart): the build's fast path for words
// written as their key changes no entry.
func TestLexiconListsAreTheWordSets(t *testing.T) {
	common, names := map[string]bool{}, map[string]bool{}
	for _, text := range []string{lexiconENText, lexiconTechText} {
		for _, line := range strings.Split(text, "\n") {
			if line == "" || line[0] == '#' {
				continue
			}
			for _, w := range strings.Fields(line) {
				r, _ := utf8.DecodeRuneInString(w)
				if unicode.IsUpper(r) {
					names[NormWord(w)] = true
				} else {
					common[NormWord(w)] = true
				}
			}
		}
	}
	l := buildEnglishLexicon()
	for _, c := range []struct {
		name string
		want map[string]bool
		got  *wordSet
	}{{"common", common, &l.common}, {"names", names, &l.names}} {
		if want, got := slices.Sorted(maps.Keys(c.want)), c.got.keys(); !slices.Equal(want, got) {
			t.Errorf("%s: %d keys, want %d", c.name, len(got), len(want))
		}
		for k := range c.want {
			if !c.got.has(k) {
				t.Errorf("%s: %q not found", c.name, k)
				break
			}
		}
	}
	if len(common) < 50000 || len(names) < 5000 {
		t.Fatalf("%d common words, %d names: the embedded lists are not read", len(common), len(names))
	}
	if l.common.has("keamanan") || l.names.has("the") {
		t.Error("a word not in the list found")
	}
}

// BenchmarkLexiconBuild is the English lexicon's one-time build (the
// first shaped draft of a process: each `fedmem gate once` pays it).
func BenchmarkLexiconBuild(b *testing.B) {
	for b.Loop() {
		buildEnglishLexicon()
	}
}
