package sweep

import (
	"slices"
	"testing"

	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/internal/vaulttest"
)

// Archive pages (<folder>/log/000001.md, <folder>/index/000001.md, written
// by gate/commit/folderlog.go when a page fills up) are gate pages, not notes: the
// sweep's walk (CollectNotes) skips them, and still sees a note that lives
// in a folder named log.
func TestSweepSkipsLogAndIndexArchivePages(t *testing.T) {
	v := vaulttest.New(t)
	vaulttest.Commit(t, v, map[string]string{
		"20-domains/log/000001.md":   "# Log\n\n- old line\n",
		"20-domains/index/000002.md": "# Index\n\n- [x](../x.md)\n",
		"20-domains/log/notes.md":    "---\ntype: Fact\ntitle: A note in a log folder\n---\nx\n",
		"20-domains/real.md":         "---\ntype: Fact\ntitle: Real\n---\nx\n",
		"log/000001.md":              "---\ntype: Fact\ntitle: top-level log folder\n---\nx\n",
	})
	r := vaulttest.Open(t, v)
	_, head, err := r.Head()
	if err != nil {
		t.Fatal(err)
	}
	hv, err := decide.NewHeadView(r, head)
	if err != nil {
		t.Fatal(err)
	}
	var notes []NoteAt
	if err := CollectNotes(hv, hv.Root(), "", &notes); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range notes {
		got = append(got, n.Path)
	}
	for _, p := range []string{"20-domains/log/000001.md", "20-domains/index/000002.md"} {
		if slices.Contains(got, p) {
			t.Errorf("archive page %s listed as a note: %v", p, got)
		}
	}
	for _, p := range []string{"20-domains/log/notes.md", "20-domains/real.md"} {
		if !slices.Contains(got, p) {
			t.Errorf("note %s not listed: %v", p, got)
		}
	}
}
