package mounts

import (
	"path/filepath"

	"github.com/fedmem/fedmem/mounts/request"
	"github.com/fedmem/fedmem/vault"
)

// WhyPropose is the Why of a proposed workdir's mount. The after-session
// walk and the persistence holds (protectPersistence) key on the Why
// "workdir" and so leave a proposal alone: nothing the agent writes there
// reaches the real tree, and the proposal flags every persistence-class
// file it holds instead (sandbox/launch/propose.go).
const WhyPropose = "workdir: a proposal (overlay; writes stay in the sandbox, capped at limits.workdir_bytes, and become a branch or patch after the session)"

// workdirMount is the workdir's writable mount: a bind, or with profile
// `workdir: propose` an overlay over the real tree (Propose, Size).
func workdirMount(rq *request.Request, in Input) Mount {
	if !rq.ProposeWorkdir {
		return Mount{Kind: BindRW, Source: in.Workdir, Target: in.Workdir, Dir: true, Why: "workdir"}
	}
	return Mount{Kind: BindRW, Source: in.Workdir, Target: in.Workdir, Dir: true, Propose: true,
		Size: rq.WorkdirBytes, Why: WhyPropose}
}

// ProposedWorkdir returns the plan's proposed workdir mount, or nil.
func (pl *Plan) ProposedWorkdir() *Mount {
	for i := range pl.Mounts {
		if pl.Mounts[i].Propose {
			return &pl.Mounts[i]
		}
	}
	return nil
}

// HostWritable are the host paths the agent's writable binds reach, their
// sources: the workdir (under workdir: propose too — an earlier session of
// another profile may have written its tree), writable home paths, state
// folders, the inbox. A program fedmem-run runs outside the sandbox must
// not come from one. Not the sandbox's own tmpfs (/tmp, /dev/shm, in
// Writable), which no host process sees: a helper installed under the
// host's /tmp is not the agent's.
func (pl *Plan) HostWritable() []string {
	var out []string
	for _, m := range pl.Mounts {
		if m.Kind == BindRW && m.Source != "" {
			out = append(out, m.Source)
		}
	}
	return out
}

// UnderAny reports the first of roots that p lies at or under (vault.Within),
// each of the two taken as written (cleaned) and with its links resolved:
// p reached through a link into a root, or a root reached through a link,
// still counts. It names the matching forms of p and of the root. Used
// with HostWritable for the programs fedmem-run runs outside the sandbox.
// A caller judging many paths against the same roots resolves them once
// (ResolveRoots).
func UnderAny(p string, roots []string) (path, root string, ok bool) {
	return ResolveRoots(roots).Under(p)
}

// Roots are roots as UnderAny takes them, each resolved once: every form
// (cleaned, and with its links resolved) in the order given. hostPATH
// judges each PATH entry against the same roots; resolving them once per
// entry walked every root's links again (13 PATH entries × 10 writable
// roots: 1,400 lstat calls, 12% of a session's start-up CPU).
type Roots [][]string

// ResolveRoots resolves roots for Under.
func ResolveRoots(roots []string) Roots { return ResolveRootsIn(nil, roots) }

// ResolveRootsIn is ResolveRoots on the view l (nil: the links as they
// are now).
func ResolveRootsIn(l *Links, roots []string) Roots {
	out := make(Roots, len(roots))
	for i, r := range roots {
		out[i] = withReal(l, r)
	}
	return out
}

// Under is UnderAny(p, roots) for the roots rs was resolved from, with
// their links as they were then.
func (rs Roots) Under(p string) (path, root string, ok bool) { return rs.UnderIn(nil, p) }

// UnderIn is Under with p's links resolved on the view l (nil: as they
// are now).
func (rs Roots) UnderIn(l *Links, p string) (path, root string, ok bool) {
	ps := withReal(l, p)
	for _, forms := range rs {
		for _, rv := range forms {
			for _, pv := range ps {
				if vault.Within(pv, rv) {
					return pv, rv, true
				}
			}
		}
	}
	return "", "", false
}

// withReal is p cleaned and, when it resolves to another path (on the
// view l), that path.
func withReal(l *Links, p string) []string {
	c := filepath.Clean(p)
	if r, err := l.EvalSymlinks(c); err == nil && r != c {
		return []string{c, r}
	}
	return []string{c}
}
