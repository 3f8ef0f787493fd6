package decide

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/fedmem/fedmem/gate/decide/shape"
	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/gate/validate"
)

// The shape check never panics and stays within its bound of findings on
// any draft (seeds: the trusted corpus).
func FuzzShape(f *testing.F) {
	for _, dir := range []string{"../testdata/trusted/hostile", "../testdata/trusted/benign"} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
				f.Add(b)
			}
		}
	}
	sh := policy.DefaultShapes()["fact"]
	f.Fuzz(func(t *testing.T, b []byte) {
		res, err := validate.Draft(b)
		if err != nil || res.Note == nil {
			return
		}
		if fs := shape.Check(sh, res); len(fs) > shape.MaxFindings+1 {
			t.Fatalf("%d findings", len(fs))
		}
		nestedClaims(res.Note)
		bodyFrontmatter(res.Note.Body)
	})
}
