package mounts

import (
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/moby/sys/mountinfo"

	"github.com/fedmem/fedmem/profiles"
	"github.com/fedmem/fedmem/vault"
)

// Kinds that keep the agent from leaving code that runs later outside the
// sandbox (guarantee 6).
const (
	// Protected makes one file or directory inside a writable path
	// read-only: an existing one is bound read-only onto itself (with
	// everything beneath it); an absent one gets a read-only
	// placeholder over its name (Placeholder set), so the agent can neither
	// write it nor create it. A placeholder directory is an empty read-only tmpfs; a
	// placeholder file reads empty ("{}" for a .json name). The backend
	// creates the mount point on the host (mode 0000, empty) and fedmem-run
	// removes it after the session if it is still that placeholder.
	Protected Kind = "protected"
	// Pinned binds an existing directory on the way to a Protected path onto
	// itself, writable as before. A mount point cannot be renamed or removed
	// (EBUSY), so the agent cannot move `.git` aside and put a directory of
	// its own, with hooks and config, in its place.
	Pinned Kind = "pinned"
)

// protectPersistence adds, after the writable binds, a Protected mount for
// every persistence path that lies in a writable path, and a Pinned mount
// for every existing directory between that writable path and it. It must
// be called before the vault and the masks are added: they stay on top.
func protectPersistence(pl *Plan, in Input, exists func(string) (bool, bool), writable []Mount, extra []configured) {
	type cand struct {
		path string
		p    profiles.Persist
		conf bool // named by the user's configuration (configuredRunLater)
	}
	var cands []cand
	var roots []string
	for _, m := range writable {
		roots = append(roots, m.Target)
		if m.Dir && (m.Why == "workdir" || m.Why == "profile: writable") {
			for _, p := range profiles.ProjectPersist {
				cands = append(cands, cand{filepath.Join(m.Target, p.Path), p, false})
			}
		}
	}
	for _, p := range profiles.HomePersist {
		cands = append(cands, cand{filepath.Join(in.Home, p.Path), p, false})
	}
	for _, c := range extra {
		cands = append(cands, cand{c.path, c.p, true})
	}
	root := func(p string) string {
		best := ""
		for _, r := range roots {
			if vault.Within(p, r) && len(r) > len(best) {
				best = r
			}
		}
		return best
	}
	seen := map[string]bool{}
	var out []Mount
	for _, c := range cands {
		r := root(c.path)
		if r == "" || vault.Within(c.path, in.Vault) || vault.Within(in.Vault, c.path) {
			continue // read-only already; the vault stays the vault's
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(c.path, r), "/")
		if rel == "" && c.conf {
			// The user's configuration names a whole writable path as
			// code (core.hooksPath = the workdir): holding it read-only
			// would end the session's purpose; say so instead.
			pl.Warnings = append(pl.Warnings, fmt.Sprintf("%s is a writable path and %s: the agent can change what runs there later", c.path, c.p.Why))
			continue
		}
		if rel == "" {
			// A writable bind of exactly this path (a profile opened
			// ~/.bashrc): protection wins.
			if !seen[c.path] {
				seen[c.path] = true
				_, isDir := exists(c.path)
				out = append(out, Mount{Kind: Protected, Source: c.path, Target: c.path, Dir: isDir, Why: "runs code later: " + c.p.Why})
			}
			continue
		}
		parts := strings.Split(rel, "/")
		cur := r
		for i, part := range parts {
			cur = path.Join(cur, part)
			last := i == len(parts)-1
			if seen[cur] {
				if isProtected(out, cur) {
					break // covered by a read-only parent
				}
				continue
			}
			ok, isDir := exists(cur)
			switch {
			case !ok:
				seen[cur] = true
				out = append(out, Mount{Kind: Protected, Target: cur, Dir: !last || c.p.Dir, Placeholder: true, Why: "absent, must not be created: " + c.p.Why})
			case last || !isDir:
				// Present: the file itself, or a non-directory where a
				// directory belongs (.git as a worktree's gitdir file).
				seen[cur] = true
				out = append(out, Mount{Kind: Protected, Source: cur, Target: cur, Dir: isDir, Why: "runs code later: " + c.p.Why})
			default:
				seen[cur] = true
				out = append(out, Mount{Kind: Pinned, Source: cur, Target: cur, Dir: true, Why: "holds " + c.p.Path + ": a mount point cannot be renamed away"})
				continue
			}
			break
		}
	}
	// Parents before children: a pin must exist before what it holds is
	// bound, and a read-only parent before nothing else beneath it.
	sort.SliceStable(out, func(i, j int) bool { return depth(out[i].Target) < depth(out[j].Target) })
	pl.Mounts = append(pl.Mounts, out...)
}

// QuarantineCandidates are the profiles.AfterSession paths of the plan: under the
// workdir and every profile `writable:` directory, outside the vault.
func (pl *Plan) QuarantineCandidates() []string {
	var out []string
	for _, m := range pl.Mounts {
		if m.Kind != BindRW || !m.Dir || (m.Why != "workdir" && m.Why != "profile: writable") {
			continue
		}
		for _, p := range profiles.AfterSession {
			t := filepath.Join(m.Target, p.Path)
			if !vault.Within(t, pl.Vault) {
				out = append(out, t)
			}
		}
	}
	return out
}

func isProtected(ms []Mount, p string) bool {
	for _, m := range ms {
		if m.Target == p && m.Kind == Protected {
			return true
		}
	}
	return false
}

// Placeholders lists the Protected mounts whose mount point did not exist
// when the plan was made: the backend creates them on the host and
// fedmem-run removes them after the session.
func (pl *Plan) Placeholders() []Mount {
	var out []Mount
	for _, m := range pl.Mounts {
		if m.Kind == Protected && m.Placeholder {
			out = append(out, m)
		}
	}
	return out
}

// verifyPersistence fails closed unless every Protected path is served by a
// read-only mount at exactly that path and every Pinned directory is a
// mount point.
func verifyPersistence(pl *Plan, infos []*mountinfo.Info) error {
	for _, pm := range pl.Mounts {
		switch pm.Kind {
		case Protected:
			if m := serving(infos, pm.Target); m == nil || m.Mountpoint != pm.Target || !readOnly(m) {
				return &VerifyError{Path: pm.Target, Rule: "persistence-readonly", Detail: describe(m)}
			}
		case Pinned:
			if m := serving(infos, pm.Target); m == nil || m.Mountpoint != pm.Target {
				return &VerifyError{Path: pm.Target, Rule: "persistence-pinned", Detail: "not a mount point: " + describe(m)}
			}
		}
	}
	return nil
}
