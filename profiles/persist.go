package profiles

import (
	"fmt"
	"path"
	"strings"
	"sync"

	"github.com/fedmem/fedmem/mounts/families"
)

// The names that run code later are the tables of mounts/families, which
// the plan reads too; profiles' own names for them stay.
type (
	Persist    = families.Persist
	Family     = families.Family
	Pattern    = families.Pattern
	PatternSet = families.PatternSet
)

var (
	GitPersist       = families.GitPersist
	AfterSession     = families.AfterSession
	HomePersist      = families.HomePersist
	ProjectFamilies  = families.ProjectFamilies
	InstructionFiles = families.InstructionFiles
)

// NewPatternSet is families.NewPatternSet.
func NewPatternSet(fams ...*Family) *PatternSet { return families.NewPatternSet(fams...) }

// ProjectPatterns is families.ProjectPatterns.
func ProjectPatterns(instructionsReadOnly bool) *PatternSet {
	return families.ProjectPatterns(instructionsReadOnly)
}

// InstructionPatterns is families.InstructionPatterns.
func InstructionPatterns() *PatternSet { return families.InstructionPatterns() }

// persistenceWarnings names the paths that run code later which a profile
// opens for writing: fedmem keeps them read-only inside the sandbox anyway
// (guarantee 6), so the agent cannot change them there, and the profile
// should say what it means.
func persistenceWarnings(p *Profile) []string {
	var out []string
	if p.Home.Mode == "hidden" {
		return nil
	}
	for _, w := range p.Home.Writable {
		c := path.Clean(w)
		if contains(broadHome, c) {
			continue // Check already calls it broad
		}
		var held []string
		for _, h := range HomePersist {
			if h.Path == c || strings.HasPrefix(h.Path, c+"/") {
				held = append(held, "~/"+h.Path)
			}
		}
		if len(held) > 0 {
			out = append(out, fmt.Sprintf("home.writable %q holds %s, which make tools run code outside the sandbox: they stay read-only inside (guarantee 6)", w, strings.Join(held, ", ")))
		}
	}
	for i, w := range p.Writable {
		c := path.Clean(w)
		for _, h := range HomePersist {
			if c == "/"+h.Path || strings.HasSuffix(c, "/"+h.Path) {
				out = append(out, fmt.Sprintf("writable[%d] %q is %s, which makes tools run code outside the sandbox: it stays read-only inside (guarantee 6)", i, w, h.Path))
			}
		}
		for _, h := range GitPersist {
			if strings.HasSuffix(c, "/"+h.Path) {
				out = append(out, fmt.Sprintf("writable[%d] %q is a project's %s, which makes tools run code outside the sandbox: it stays read-only inside (guarantee 6)", i, w, h.Path))
			}
		}
		parts := strings.Split(strings.TrimPrefix(c, "/"), "/")
		for k := 1; k <= 3 && k <= len(parts); k++ {
			if m := projectPatterns().Match(strings.Join(parts[len(parts)-k:], "/")); m != nil {
				out = append(out, fmt.Sprintf("writable[%d] %q is a project's %s (%s), which makes tools run code outside the sandbox: it stays read-only inside (guarantee 6)", i, w, m.Path, m.Family.Name))
				break
			}
		}
	}
	return out
}

// projectPatterns is compiled at its first use, not at package init (the
// sandbox's pid 1 links this package and never checks a profile).
var projectPatterns = sync.OnceValue(func() *PatternSet { return ProjectPatterns(false) })
