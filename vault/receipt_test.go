package vault

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"
)

// sortedDigest is ReadsDigest's definition: the paths sorted whole.
func sortedDigest(commit string, paths []string) string {
	s := append([]string{}, paths...)
	sort.Strings(s)
	h := sha256.New()
	fmt.Fprintf(h, "fedmem-reads-v1\n%s\n", commit)
	for _, p := range s {
		fmt.Fprintf(h, "%s\n", p)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// TestReadsDigestOrder: ReadsDigest (sorted in place of a copy, hashed
// in large writes) is its definition, the paths sorted whole and
// hashed line by line, for any paths — names that are prefixes of other
// names and of folders, a folder and a file of one name, bytes below and
// above "/", empty names (leading, doubled and trailing slashes), the
// same path twice, none — and leaves its input as it was.
func TestReadsDigestOrder(t *testing.T) {
	rng := rand.New(rand.NewSource(21))
	parts := []string{"", "a", "ab", "a-b", "a.b", "a0", "b", "ab/", "z", "\x01", "\xff", "note.md", "index.md"}
	for round := 0; round < 400; round++ {
		var paths []string
		for n := rng.Intn(60); len(paths) < n; {
			var b strings.Builder
			for k := 1 + rng.Intn(4); k > 0; k-- {
				b.WriteString(parts[rng.Intn(len(parts))])
				if k > 1 {
					b.WriteByte('/')
				}
			}
			paths = append(paths, b.String())
			if rng.Intn(8) == 0 {
				paths = append(paths, paths[rng.Intn(len(paths))])
			}
		}
		before := fmt.Sprint(paths)
		if got, want := ReadsDigest("c0ffee", paths), sortedDigest("c0ffee", paths); got != want {
			t.Fatalf("paths %q: digest %s, sorted %s", paths, got, want)
		}
		if fmt.Sprint(paths) != before {
			t.Fatalf("ReadsDigest changed its input: %q", paths)
		}
	}
	var large []string
	for i := 0; i < 20000; i++ {
		large = append(large, fmt.Sprintf("10-projects/d%04d/note-%06d.md", i%97, i), fmt.Sprintf("10-projects/index%d.md", i%3))
	}
	if got, want := ReadsDigest("c", large), sortedDigest("c", large); got != want {
		t.Errorf("large: digest %s, sorted %s", got, want)
	}
}

// BenchmarkReadsDigest: the digest of a grep's 100k reads in 1000
// folders (make bench's vault layout), folder after folder, each in no
// order (an ext4 folder lists its names in hash order).
func BenchmarkReadsDigest(b *testing.B) {
	rng := rand.New(rand.NewSource(21))
	var paths []string
	for d := 0; d < 1000; d++ {
		for _, i := range rng.Perm(100) {
			paths = append(paths, fmt.Sprintf("10-projects/d%04d/note-%06d.md", d, d*100+i))
		}
	}
	paths = append(paths, "10-projects/index.md", "index.md")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ReadsDigest("4f20d8909c712a72edbddeda5db57a1dce09e9c4", paths)
	}
}
