package repo

import (
	"bytes"
	"fmt"
	"github.com/fedmem/fedmem/test/testutil"
	"math/rand"
	"sort"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// randomTree is a raw tree of n entries (files and folders, some names
// prefixes of others) in Git's order.
func randomTree(rng *rand.Rand, names []string) []byte {
	type ent struct {
		key string
		raw []byte
	}
	var ents []ent
	for _, name := range names {
		dir := rng.Intn(4) == 0
		var id [20]byte
		rng.Read(id[:])
		mode, key := "100644", name
		if dir {
			mode, key = "40000", name+"/"
		}
		ents = append(ents, ent{key, append([]byte(mode+" "+name+"\x00"), id[:]...)})
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].key < ents[j].key })
	var out []byte
	for _, e := range ents {
		out = append(out, e.raw...)
	}
	return out
}

// TestPackDeltas: the deltas writePack stores (tree entry by entry, pages
// by common prefix and suffix) rebuild the new version exactly when
// applied by go-git's patcher, for random edits (seed logged;
// FEDMEM_TEST_SEED replays one).
func TestPackDeltas(t *testing.T) {
	rng := testutil.Seed(t)
	for round := 0; round < 200; round++ {
		var names []string
		seen := map[string]bool{}
		for i := rng.Intn(300); i > 0; i-- {
			n := fmt.Sprintf("n%d", rng.Intn(1000))
			if rng.Intn(3) == 0 {
				n += ".md"
			}
			if !seen[n] {
				seen[n] = true
				names = append(names, n)
			}
		}
		src := randomTree(rng, names)
		// dst: some entries dropped, some added, some ids changed.
		var kept []string
		for _, n := range names {
			if rng.Intn(10) != 0 {
				kept = append(kept, n)
			}
		}
		for i := rng.Intn(5); i > 0; i-- {
			if n := fmt.Sprintf("m%d", rng.Intn(1000)); !seen[n] {
				seen[n] = true
				kept = append(kept, n)
			}
		}
		r2 := rand.New(rand.NewSource(int64(round)))
		dst := randomTree(r2, kept)
		// Share most entries with src: copy src's entries whose name survives.
		dst = mixTrees(src, dst, rng)
		for _, pair := range [][2][]byte{{src, dst}, {dst, src}} {
			d := treeDelta(pair[0], pair[1])
			got, err := packfile.PatchDelta(pair[0], d)
			if len(pair[0]) == 0 || len(pair[1]) == 0 {
				continue // never a delta (encodePack)
			}
			if err != nil || !bytes.Equal(got, pair[1]) {
				t.Fatalf("round %d: tree delta does not rebuild the tree: %v", round, err)
			}
		}
		a := make([]byte, rng.Intn(1<<17))
		rng.Read(a)
		b := append(append(append([]byte(nil), a[:len(a)/3]...), []byte("a new line\n")...), a[len(a)/2:]...)
		for _, pair := range [][2][]byte{{a, b}, {b, a}, {a, a}} {
			d := affixDelta(pair[0], pair[1])
			got, err := packfile.PatchDelta(pair[0], d)
			if len(pair[0]) == 0 || len(pair[1]) == 0 {
				continue // never a delta (encodePack)
			}
			if err != nil || !bytes.Equal(got, pair[1]) {
				t.Fatalf("round %d: affix delta does not rebuild the blob: %v", round, err)
			}
		}
	}
}

// mixTrees returns dst with each entry replaced, at random, by src's entry
// of the same name and kind (so the two trees share runs of entries).
func mixTrees(src, dst []byte, rng *rand.Rand) []byte {
	byKey := map[string][]byte{}
	for i := 0; i < len(src); {
		name, dir, end, _ := NextEntry(src, i)
		byKey[fmt.Sprint(string(name), dir)] = src[i:end]
		i = end
	}
	var out []byte
	for j := 0; j < len(dst); {
		name, dir, end, _ := NextEntry(dst, j)
		ent := dst[j:end]
		if s, ok := byKey[fmt.Sprint(string(name), dir)]; ok && rng.Intn(8) != 0 {
			ent = s
		}
		out = append(out, ent...)
		j = end
	}
	return out
}
