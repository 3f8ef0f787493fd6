package mounts

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/fedmem/fedmem/vault"
	"github.com/fedmem/fedmem/vault/view"
)

// View is what a plan under `vault.view: in-force` hides of the vault
// (issue 21 item 3, vault/view): the notes not in force, the vault's
// history and its archive. The backends realise it as a read-only overlay
// over each vault bind whose top layer holds a whiteout at each hidden
// path (Mount.Hide) and the folder pages rewritten without them.
type View struct {
	Mode string `json:"mode"` // view.InForce
	// Commit is the vault's HEAD the view was judged at ("" unborn).
	Commit string `json:"commit,omitempty"`
	// Source says how: "manifest" (the gate's, at HEAD) or "scan" (the
	// launcher read every note: the manifest was missing or stale).
	Source string `json:"source"`
	// Scanned is how many notes a scan read.
	Scanned int `json:"scanned,omitempty"`
	// Why the manifest was not used (a scan).
	Stale string `json:"stale,omitempty"`
	// Count is how many vault paths are hidden.
	Count int `json:"count"`
	// Hidden are the first MaxViewListed of them and why, in path order
	// (for --explain; the backends take the paths from Mount.Hide).
	Hidden []view.Entry `json:"hidden"`
	// all are every hidden path (not in the plan's JSON: the mounts carry
	// them).
	all []view.Entry
}

// MaxViewListed bounds View.Hidden.
const MaxViewListed = 50

// View sources.
const (
	ViewFromManifest = "manifest"
	ViewFromScan     = "scan"
	// ViewPlaceholder: a plan without a vault (`fedmem profile explain`):
	// nothing judged yet.
	ViewPlaceholder = "placeholder"
)

// LoadView judges the vault at vaultDir for a session starting at now:
// from the gate's manifest when it names HEAD, else by reading every
// note (the warning says why).
func LoadView(vaultDir string, now time.Time) (*View, error) {
	head, err := vault.ReadHead(vaultDir)
	if err != nil {
		return nil, fmt.Errorf("vault.view: %w", err)
	}
	v := &View{Mode: view.InForce, Commit: head, Source: ViewFromManifest}
	m, err := view.Read(vaultDir, head)
	if err != nil {
		if !errors.Is(err, view.ErrStale) {
			err = fmt.Errorf("%w: %v", view.ErrStale, err)
		}
		v.Source, v.Stale = ViewFromScan, err.Error()
		if m, v.Scanned, err = view.Scan(vaultDir); err != nil {
			return nil, fmt.Errorf("vault.view: judging the vault's notes: %w", err)
		}
	}
	v.all = m.At(now, view.Fixed(vaultDir))
	v.Count = len(v.all)
	v.Hidden = v.all[:min(len(v.all), MaxViewListed)]
	return v, nil
}

// hideUnder returns the hidden paths of v under the vault folder rel
// ("." the vault itself), relative to it.
func (v *View) hideUnder(rel string) []string {
	var out []string
	for _, e := range v.all {
		switch {
		case rel == ".":
			out = append(out, e.Path)
		case strings.HasPrefix(e.Path, rel+"/"):
			out = append(out, strings.TrimPrefix(e.Path, rel+"/"))
		}
	}
	return out
}

// Viewed returns the plan's mounts that carry a view (an overlay).
func (pl *Plan) Viewed() []*Mount {
	var out []*Mount
	for i := range pl.Mounts {
		if pl.Mounts[i].View {
			out = append(out, &pl.Mounts[i])
		}
	}
	return out
}

// viewRel is the vault folder a vault bind's target is.
func viewRel(vaultDir, target string) string {
	if target == vaultDir {
		return "."
	}
	return path.Clean(strings.TrimPrefix(target, vaultDir+"/"))
}
