package mounts

import (
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/moby/sys/mountinfo"

	"github.com/fedmem/fedmem/mounts/families"
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
//
// At the top of the workdir and of every profile `writable:` directory it
// holds families.GitPersist (an absent name under a placeholder: Git shows
// no entry named .git nor anything inside one) and every existing entry that
// matches a families.ProjectFamilies pattern (listed through in.List). An
// absent family name gets no placeholder — a placeholder is a file Git
// lists as untracked, an agent's `git add -A` commits it and the host then
// shows it deleted (issue 23) —: the after-session walk judges it, at the
// top as at every depth below (sandbox/guard/nestedrepo_linux.go). A name the
// user's configuration names as code (extra) that is absent goes to
// pl.Watch instead of a placeholder, unless it lies in a .git.
func protectPersistence(pl *Plan, in Input, exists func(string) (bool, bool), writable []Mount, extra []configured) {
	type cand struct {
		path string
		p    families.Persist
		conf bool // named by the user's configuration (configuredRunLater)
		hold bool // an absent name gets a placeholder
	}
	var cands []cand
	var roots []string
	fams := families.ProjectPatterns(pl.InstructionsReadOnly)
	var entries []string // homeTop's writable non-dot entries: not roots
	for _, m := range writable {
		if m.Why == WhyHomeEntry {
			entries = append(entries, m.Target)
			continue
		}
		roots = append(roots, m.Target)
		if m.Dir && (m.Why == "workdir" || m.Why == "profile: writable") {
			for _, p := range families.GitPersist {
				cands = append(cands, cand{filepath.Join(m.Target, p.Path), p, false, true})
			}
			for _, f := range familyMatches(m.Target, fams, exists, in.List, in.RealPath) {
				cands = append(cands, cand{f.path, f.p, false, false})
			}
		}
	}
	for _, p := range families.HomePersist {
		cands = append(cands, cand{filepath.Join(in.Home, p.Path), p, false, true})
	}
	for _, c := range extra {
		cands = append(cands, cand{c.path, c.p, true, false})
	}
	root := func(p string) string {
		best, proposed := "", false
		for i, r := range roots {
			if vault.Within(p, r) && len(r) > len(best) {
				best, proposed = r, writable[i].Propose
			}
		}
		if proposed {
			// A proposed workdir: nothing written there reaches the
			// real tree, and the proposal flags what it holds.
			return ""
		}
		return best
	}
	seen := map[string]bool{}
	watched := map[string]bool{}
	var out []Mount
	for _, c := range cands {
		r := root(c.path)
		if r == "" || vault.Within(c.path, in.Vault) || vault.Within(in.Vault, c.path) {
			continue // read-only already; the vault stays the vault's
		}
		if inHomeTop(pl, entries, c.path, r) {
			continue // read-only already: the home's top level (homeTop)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(c.path, r), "/")
		if rel == "" && c.conf {
			// The user's configuration names a whole writable path as
			// code (core.hooksPath = the workdir): holding it read-only
			// would end the session's purpose; say so instead.
			pl.Warnings = append(pl.Warnings, fmt.Sprintf("%s is a writable path and %s: the agent can change what runs there later", c.path, c.p.Why))
			continue
		}
		if rel == "" && !c.hold {
			// A family name that is a link to a whole writable path
			// (.codex -> .): holding that read-only would end the
			// session's purpose; the walk judges what changes there.
			pl.Warnings = append(pl.Warnings, fmt.Sprintf("%s is a writable path and a link to it is a persistence name (%s): the agent can change what runs there later; it is checked after the session", c.path, c.p.Why))
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
			case !ok && !c.hold && !inGitDir(strings.TrimPrefix(strings.TrimPrefix(cur, r), "/")):
				// No placeholder outside .git: the after-session walk
				// judges a family name; a configured one is watched.
				if c.conf && !watched[cur] {
					watched[cur] = true
					pl.Watch = append(pl.Watch, cur)
				}
			case !ok:
				seen[cur] = true
				out = append(out, Mount{Kind: Protected, Target: cur, Dir: !last || c.p.Dir, Placeholder: true, Why: "absent, must not be created: " + c.p.Why})
			case last || !isDir:
				// Present: the file itself, or a non-directory where a
				// directory belongs (.git as a worktree's gitdir file).
				seen[cur] = true
				out = append(out, Mount{Kind: Protected, Source: cur, Target: cur, Dir: isDir, Why: "runs code later: " + c.p.Why})
			case pl.HomeTop != "" && (cur == pl.HomeTop || inHomeTop(pl, entries, cur, r)):
				// The read-only home (a mount point) or a dot-entry under
				// it: nothing renames it, and a pin — a writable bind of
				// the host's directory under runc and containerd — would
				// make it writable again.
				seen[cur] = true
				continue
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
	sort.Strings(pl.Watch)
}

// inGitDir reports whether the root-relative path rel is .git or lies in
// it: Git lists neither, so a placeholder there is invisible to it.
func inGitDir(rel string) bool {
	return rel == ".git" || strings.HasPrefix(rel, ".git/")
}

type familyMatch struct {
	path string
	p    families.Persist
}

// maxFamilyList bounds the names familyMatches reads in one directory.
const maxFamilyList = 100000

// familyMatches lists the existing entries under root that match a pattern
// of fams (segment by segment, through directories only; a non-directory
// where a pattern goes on is a match itself: .jj/repo as a workspace's
// pointer file). Names are read through list; nil lists nothing.
//
// A match that is a symbolic link (.clinerules -> AGENTS.md, .codex ->
// shared/codex) cannot be made read-only by a mount on its name, and a
// write through it lands in its target: the target (resolved by real) is
// the match instead — held where it lies in a writable path, read-only
// already elsewhere. Before, every such link refused the session. A link
// real cannot resolve (dangling, or real nil) stays the match: the backend
// refuses it, naming the path (fail closed: the agent could create its
// target).
func familyMatches(root string, fams *families.PatternSet, exists func(string) (bool, bool), list func(string) ([]string, error), real func(string) string) []familyMatch {
	if list == nil {
		return nil
	}
	var out []familyMatch
	seen := map[string]bool{}
	names, _ := list(root)
	if len(names) > maxFamilyList {
		names = names[:maxFamilyList]
	}
	var walk func(dir string, names []string, p *families.Pattern, i int)
	walk = func(dir string, names []string, p *families.Pattern, i int) {
		for _, n := range names {
			if !p.MatchSeg(i, n) {
				continue
			}
			full := filepath.Join(dir, n)
			_, isDir := exists(full)
			if i == p.Len()-1 || !isDir {
				rel := strings.TrimPrefix(strings.TrimPrefix(full, root), "/")
				target := full
				if real != nil {
					if r := real(full); r != full && filepath.IsAbs(r) {
						target = r
						rel += " (a link to " + r + ")"
						_, isDir = exists(r)
					}
				}
				if !seen[target] {
					seen[target] = true
					out = append(out, familyMatch{target, families.Persist{Path: rel, Dir: isDir, Why: p.Why()}})
				}
				continue
			}
			sub, _ := list(full)
			if len(sub) > maxFamilyList {
				sub = sub[:maxFamilyList]
			}
			walk(full, sub, p, i+1)
		}
	}
	for _, n := range names {
		for _, p := range fams.First(n) {
			walk(root, []string{n}, p, 0)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}

// QuarantineCandidates are the families.AfterSession paths of the plan (under the
// workdir and every profile `writable:` directory, outside the vault) and
// its Watch names.
func (pl *Plan) QuarantineCandidates() []string {
	out := append([]string{}, pl.Watch...)
	for _, m := range pl.Mounts {
		if m.Kind != BindRW || !m.Dir || (m.Why != "workdir" && m.Why != "profile: writable") {
			continue
		}
		for _, p := range families.AfterSession {
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
