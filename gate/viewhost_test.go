package gate

import (
	"reflect"
	"testing"

	"github.com/fedmem/fedmem/vault"
	"github.com/fedmem/fedmem/vault/view"
)

// viewPaths is a manifest's hidden paths.
func viewPaths(m *view.Manifest) []string {
	var out []string
	for _, e := range m.Hidden {
		out = append(out, e.Path)
	}
	return out
}

// notePaths is viewPaths without the dot entries (fedmem init's
// .gitkeep files, .gitignore), hidden whole.
func notePaths(m *view.Manifest) []string {
	var out []string
	for _, e := range m.Hidden {
		if e.Why != view.DotWhy {
			out = append(out, e.Path)
		}
	}
	return out
}

// checkViewAtHead reads the manifest the gate wrote: it must name HEAD
// and hide exactly what the launcher's own scan of the work tree hides.
func checkViewAtHead(t *testing.T, v string) *view.Manifest {
	t.Helper()
	head, err := vault.ReadHead(v)
	if err != nil {
		t.Fatal(err)
	}
	m, err := view.Read(v, head)
	if err != nil {
		t.Fatalf("view manifest at HEAD %s: %v", head, err)
	}
	scan, _, err := view.Scan(v)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(viewPaths(m), viewPaths(scan)) || len(m.Stale) != len(scan.Stale) {
		t.Errorf("the gate's manifest and the launcher's scan disagree:\nmanifest hidden %v stale %v\nscan     hidden %v stale %v", viewPaths(m), m.Stale, viewPaths(scan), scan.Stale)
	}
	return m
}

// TestViewManifestFollowsHead (issue 21 item 3): the gate writes the
// in-force view's manifest at HEAD when it opens and after every change
// of HEAD (a sweep's withhold, a reverify's restore), at every folder
// depth, agreeing with the launcher's own judgement of the work tree.
func TestViewManifestFollowsHead(t *testing.T) {
	v := newVault(t)
	humanCommit(t, v, map[string]string{
		"20-domains/a/b/deep-draft.md": "---\nstatus: draft\n---\nx\n",
		"20-domains/expired.md":        activeNote("Past its review date", "2026-11-01T00:00:00Z", ""),
		"20-domains/fresh.md":          activeNote("Still fresh", "2099-01-01T00:00:00Z", ""),
		"20-domains/deprecated.md":     "---\ntype: Fact\nstatus: deprecated\n---\nold\n",
		"top-level.md":                 "---\nstatus: deprecated\n---\nold\n",
	})
	g := openGate(t, v)
	m := checkViewAtHead(t, v)
	want := []string{"20-domains/a/b/deep-draft.md", "20-domains/deprecated.md", "top-level.md"}
	if !reflect.DeepEqual(notePaths(m), want) || len(m.Stale) != 2 {
		t.Fatalf("manifest on open: hidden %v stale %v, want hidden %v and 2 stale", notePaths(m), m.Stale, want)
	}
	if s, err := g.Sweep(); err != nil || len(s.Withheld) != 1 {
		t.Fatalf("sweep: %+v %v", s, err)
	}
	m = checkViewAtHead(t, v)
	if want := []string{"20-domains/a/b/deep-draft.md", "20-domains/deprecated.md", "20-domains/expired.md", "top-level.md"}; !reflect.DeepEqual(notePaths(m), want) {
		t.Fatalf("manifest after the withhold: hidden %v, want %v", notePaths(m), want)
	}
	if r, err := g.Reverify("20-domains/expired.md", ""); err != nil || !r.Restored {
		t.Fatalf("reverify: %+v %v", r, err)
	}
	m = checkViewAtHead(t, v)
	if len(notePaths(m)) != 3 {
		t.Fatalf("manifest after the restore: hidden %v", notePaths(m))
	}
}
