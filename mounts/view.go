package mounts

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
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
	// Tree, with the manifest, is the gate's view tree the overlay shows
	// (vault/view.TreeDir: the notes in force as the gate wrote them from
	// the commit, not the work tree); "" with a scan, whose overlay is
	// over the live vault.
	Tree string `json:"tree,omitempty"`
	// Count is how many vault paths are hidden.
	Count int `json:"count"`
	// Hidden are the first MaxViewListed of them and why, in path order
	// (for --explain; the backends take the paths from Mount.Hide).
	Hidden []view.Entry `json:"hidden"`
	// all are every hidden path (not in the plan's JSON: the mounts carry
	// them); hide those the overlay's lower layer has (all of them over
	// the live vault; over the gate's tree, those it holds).
	all, hide []view.Entry
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
	if err == nil {
		if why := treeUsable(vaultDir, m); why != "" {
			err = fmt.Errorf("%w (%s)", view.ErrStale, why)
		} else {
			v.Tree = view.TreeDir(vaultDir)
		}
	}
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
	v.hide = v.all
	if v.Tree != "" {
		// The tree holds no note hidden when the gate first met it (and
		// its folder pages list none hidden at its commit): only those it
		// still holds — once in force, or stale since — need a whiteout.
		// A note gone stale since the gate wrote the tree is filtered
		// from the pages whether the tree holds it or not (one the index
		// does not show, of an odd mode, may be listed: red team rtview4).
		stale := map[string]bool{}
		for _, st := range m.Stale {
			stale[st.Path] = true
		}
		v.hide = nil
		for _, e := range v.all {
			if _, err := os.Lstat(filepath.Join(v.Tree, filepath.FromSlash(e.Path))); err == nil || stale[e.Path] {
				v.hide = append(v.hide, e)
			}
		}
	}
	return v, nil
}

// treeUsable says why the gate's view tree cannot stand in for the
// vault ("" when it can): not built for the manifest's commit, or not a
// folder reached without a link (the sandbox's init opens it by that
// path: a .git that is a link or a gitdir file is not the tree's).
func treeUsable(vaultDir string, m *view.Manifest) string {
	if m.Tree != m.Commit {
		return "the gate's view tree is not at the manifest's commit"
	}
	for _, p := range []string{filepath.Join(vaultDir, ".git"), view.TreeDir(vaultDir)} {
		fi, err := os.Lstat(p)
		if err != nil {
			return "the gate's view tree: " + err.Error()
		}
		if !fi.IsDir() {
			return "the gate's view tree: " + p + " is not a folder"
		}
	}
	if f, err := os.Open(view.TreeDir(vaultDir)); err != nil {
		return "the gate's view tree: " + err.Error() // another user's, not readable
	} else {
		f.Close()
	}
	return ""
}

// hideUnder returns the hidden paths of v under the vault folder rel
// ("." the vault itself), relative to it.
func (v *View) hideUnder(rel string) []string {
	var out []string
	for _, e := range v.hide {
		switch {
		case rel == ".":
			out = append(out, view.EncodePath(e.Path))
		case strings.HasPrefix(e.Path, rel+"/"):
			out = append(out, view.EncodePath(strings.TrimPrefix(e.Path, rel+"/")))
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

// ViewTreeStage is where the i-th view's tree is attached while the
// sandbox's init builds the view (its plan index for the namespace
// backend, its index among Viewed for a container's, whose runtime binds
// Mount.ViewTree there): the init detaches it once the overlay holds it.
func ViewTreeStage(i int) string { return "/tmp/.fedmem-view-tree-" + strconv.Itoa(i) }

// viewRel is the vault folder a vault bind's target is.
func viewRel(vaultDir, target string) string {
	if target == vaultDir {
		return "."
	}
	return path.Clean(strings.TrimPrefix(target, vaultDir+"/"))
}

// addViewMasks masks, under vault.view: in-force, the other paths the
// host shows the vault at — a bind of it (host.Aliases), its place in a
// mirror of the root — and the real folder of a .git that is a link or a
// `gitdir:` file: the read-only host tree would show every note there,
// those the view hides and the history too (red team rtview:
// TestRTViewVaultAlias, TestRTViewGitDirSymlink). A path that holds the
// workdir, the home or the vault itself cannot be masked: refused.
func (b *planBuilder) addViewMasks() error {
	in := b.in
	if in.View == nil {
		return nil
	}
	var paths []string
	if in.Aliases != nil {
		for _, a := range in.Aliases(in.Vault) {
			if a.Path != "" {
				paths = append(paths, a.Path)
			}
		}
	}
	for _, m := range in.Mirrors {
		paths = append(paths, filepath.Join(m, in.Vault))
	}
	if g := realGitDir(in); g != "" {
		paths = append(paths, g)
	}
	seen := map[string]bool{}
	for _, t := range paths {
		t = filepath.Clean(t)
		if seen[t] || !filepath.IsAbs(t) || vault.Within(t, in.Vault) || b.hiddenAt(t) {
			continue
		}
		seen[t] = true
		ok, isDir := b.exists(t)
		if !ok {
			continue
		}
		if vault.Within(in.Vault, t) || (in.Workdir != "" && vault.Within(in.Workdir, t)) || (in.Home != "" && vault.Within(in.Home, t)) {
			return fmt.Errorf("%w: %s shows the vault %s at another path and holds the vault, the workdir or the home: the in-force view cannot hide notes there (rule vault-view-alias): unmount it, or use vault.view: all", ErrPlan, t, in.Vault)
		}
		b.add(Mount{Kind: Masked, Target: t, Dir: isDir, Why: "another path of the vault (vault.view: in-force hides its notes there too)"})
	}
	return nil
}

// realGitDir is where the vault's history really is when its .git is a
// link or a `gitdir:` file ("" when .git is the folder itself).
func realGitDir(in Input) string {
	dot := filepath.Join(in.Vault, ".git")
	if in.Readlink != nil {
		if l, err := in.Readlink(dot); err == nil {
			if !filepath.IsAbs(l) {
				l = filepath.Join(in.Vault, l)
			}
			if in.RealPath != nil {
				return in.RealPath(l)
			}
			return filepath.Clean(l)
		}
	}
	if in.ReadFile != nil {
		if b, err := in.ReadFile(dot); err == nil && b != nil {
			if g, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:"); ok {
				g = strings.TrimSpace(g)
				if !filepath.IsAbs(g) {
					g = filepath.Join(in.Vault, g)
				}
				return filepath.Clean(g)
			}
		}
	}
	return ""
}
