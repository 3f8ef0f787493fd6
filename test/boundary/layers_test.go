package boundary

import (
	"sort"
	"testing"
)

// gitLayer is the one package of the module that imports go-git (issue 20):
// objects, trees, packs, refs with compare-and-swap, the split index and
// remotes. Everything else reaches Git through its API.
const gitLayer = module + "/vault/repo"

// TestOneGitLayer: exactly one non-test package imports go-git, and it is
// vault/repo. Checked with cgo on and off, so that no cgo-only file hides an
// import; the positive control is the layer's own import.
func TestOneGitLayer(t *testing.T) {
	root := moduleRoot(t)
	for _, cgo := range []string{"0", "1"} {
		pkgs := goListImports(t, root, cgo, "./...")
		if _, ok := pkgs[module+"/gate"]; !ok {
			t.Fatalf("CGO_ENABLED=%s: go list ./... did not list the gate; got %d packages", cgo, len(pkgs))
		}
		if !containsPrefix(pkgs[gitLayer], "github.com/go-git/go-git") {
			t.Fatalf("CGO_ENABLED=%s: go list sees no go-git import in %s itself: the walk cannot see one elsewhere either", cgo, gitLayer)
		}
		var importers []string
		for p, imps := range pkgs {
			if containsPrefix(imps, "github.com/go-git/go-git") {
				importers = append(importers, p)
			}
		}
		sort.Strings(importers)
		if len(importers) != 1 || importers[0] != gitLayer {
			t.Errorf("CGO_ENABLED=%s: the packages importing go-git are %v; only %s may (route Git through its API)", cgo, importers, gitLayer)
		}
	}
}
