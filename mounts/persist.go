package mounts

import (
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/moby/sys/mountinfo"

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

// Persist is one name that makes a tool run code later, outside the sandbox.
type Persist struct {
	Path string // relative, slash-separated
	Dir  bool
	Why  string
}

// ProjectPersist are relative to the workdir and to every directory a
// profile's `writable:` opens: repository hooks and config, and the project
// configuration of shells, editors, MCP clients and agents.
//
// Not listed, on purpose: .gitattributes and .gitmodules. Attributes only
// name filter, diff and merge drivers; the commands are defined in Git's
// config (protected here, and the user's own ~/.gitconfig is read-only), so
// an attribute cannot make Git run anything the user did not configure.
// .gitmodules' `update = !cmd` is ignored by Git when it comes from that file
// (CVE-2019-19604). Both are ordinary project content agents edit.
var ProjectPersist = []Persist{
	{".git/hooks", true, "git hooks run on the user's next commit, checkout, merge"},
	{".git/config", false, "git config runs commands: core.hooksPath, core.fsmonitor, core.sshCommand, core.pager, alias.*, filter/diff drivers, include.path"},
	{".git/info", true, "git info/attributes and info/sparse-checkout"},
	{".git/config.worktree", false, "per-worktree git config"},
	{".git/worktrees", true, "linked worktrees' commondir and config.worktree"},
	{".git/modules", true, "submodules' hooks and config"},
	{".husky", true, "husky's git hooks (core.hooksPath=.husky/_)"},
	{".pre-commit-config.yaml", false, "pre-commit runs its local hooks' entry commands on the next commit"},
	{"lefthook.yml", false, "lefthook runs its commands on git hooks"},
	{".lefthook.yml", false, "lefthook runs its commands on git hooks"},
	{".envrc", false, "direnv runs it on the user's next cd"},
	{".mcp.json", false, "MCP servers are commands the next agent starts"},
	{".vscode", true, "VS Code tasks, launch configurations and settings run commands"},
	{".idea", true, "JetBrains run configurations and startup tasks"},
	{".devcontainer", true, "dev container initializeCommand runs on the host"},
	{".claude/settings.json", false, "Claude Code hooks and permissions"},
	{".claude/settings.local.json", false, "Claude Code hooks and permissions"},
	{".claude/commands", true, "Claude Code slash commands"},
	{".claude/agents", true, "Claude Code subagents"},
	{".claude/hooks", true, "Claude Code hook scripts"},
	{".codex", true, "Codex project config (MCP servers, notify)"},
}

// AfterSession are relative to the same directories as ProjectPersist:
// names that redirect a tool to code the agent controls but that no
// placeholder can hold, because the tool refuses to work when the name
// exists at all (Git dies on an empty or unreadable .git/commondir). The
// backend records that they are absent before the session and, after it,
// moves any that appeared aside (NAME.fedmem-quarantined-SESSION) and
// reports it. A host process that runs git in the workdir *during* the
// session can still be redirected: docs/threat-model.md says so.
var AfterSession = []Persist{
	{".git/commondir", false, "commondir redirects git to another repository's hooks and config"},
}

// HomePersist are relative to $HOME: shell startup files, Git's global
// config, user services and autostart, and the agents' own settings and
// hooks. They matter where the profile makes them writable (home.writable,
// a writable home, or a workdir that is the home).
var HomePersist = []Persist{
	{".bashrc", false, "shell startup"},
	{".bash_profile", false, "shell startup"},
	{".bash_login", false, "shell startup"},
	{".bash_logout", false, "shell logout"},
	{".profile", false, "shell startup"},
	{".zshrc", false, "shell startup"},
	{".zprofile", false, "shell startup"},
	{".zshenv", false, "shell startup"},
	{".zlogin", false, "shell startup"},
	{".zlogout", false, "shell logout"},
	{".inputrc", false, "readline macros"},
	{".config/fish/config.fish", false, "shell startup"},
	{".gitconfig", false, "global git config runs commands"},
	{".config/git/config", false, "global git config runs commands"},
	{".config/autostart", true, "desktop autostart"},
	{".config/systemd", true, "user services"},
	{".config/environment.d", true, "session environment"},
	{".claude/settings.json", false, "Claude Code hooks and permissions"},
	{".claude/settings.local.json", false, "Claude Code hooks and permissions"},
	{".claude/commands", true, "Claude Code slash commands"},
	{".claude/agents", true, "Claude Code subagents"},
	{".claude/hooks", true, "Claude Code hook scripts"},
	{".codex/config.toml", false, "Codex config: MCP servers, notify command"},
}

// protectPersistence adds, after the writable binds, a Protected mount for
// every persistence path that lies in a writable path, and a Pinned mount
// for every existing directory between that writable path and it. It must
// be called before the vault and the masks are added: they stay on top.
func protectPersistence(pl *Plan, in Input, exists func(string) (bool, bool), writable []Mount) {
	type cand struct {
		path string
		p    Persist
	}
	var cands []cand
	var roots []string
	for _, m := range writable {
		roots = append(roots, m.Target)
		if m.Dir && (m.Why == "workdir" || m.Why == "profile: writable") {
			for _, p := range ProjectPersist {
				cands = append(cands, cand{filepath.Join(m.Target, p.Path), p})
			}
		}
	}
	for _, p := range HomePersist {
		cands = append(cands, cand{filepath.Join(in.Home, p.Path), p})
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

// QuarantineCandidates are the AfterSession paths of the plan: under the
// workdir and every profile `writable:` directory, outside the vault.
func (pl *Plan) QuarantineCandidates() []string {
	var out []string
	for _, m := range pl.Mounts {
		if m.Kind != BindRW || !m.Dir || (m.Why != "workdir" && m.Why != "profile: writable") {
			continue
		}
		for _, p := range AfterSession {
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
