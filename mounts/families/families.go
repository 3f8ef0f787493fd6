// Package families names what makes a tool run code later, outside the
// sandbox (guarantee 6): the persistence families' name patterns
// (ProjectFamilies, InstructionFiles) and the exact names a plan holds
// read-only (GitPersist, HomePersist, AfterSession). Pure data and the
// matching of names against it; nothing here reads the profile schema or
// touches the system. The plan (mounts), the profile's checks (profiles)
// and the backends' walk after the session all read these one tables.
package families

import (
	"path"
	"strings"
)

// Family is one family of tools whose project files make them run code
// later, outside the sandbox (guarantee 6), by patterns: every name variant
// a tool of the family reads, its local and override files included.
//
// A pattern is a slash-separated path relative to a directory; each of its
// segments is a path.Match pattern, matched without regard to letter case
// (a case-folding directory serves .VSCode for .vscode). What a pattern
// names is held whole: a file, or a directory with everything in it.
//
// The criterion: a file that is the tools' configuration, not the
// project's product, and that makes a tool the user runs routinely execute
// a command or load code it names — on the next `git commit`, `cd`, package
// manager command, editor or agent start — without the user choosing to run
// project code. Such files are often untracked or ignored (lefthook-local.yml,
// .npmrc, mise.local.toml), so no review of the change set shows them.
// Code the user runs deliberately (Makefiles, package.json scripts, tests,
// a virtualenv) is not on it: the change set shows it as the work it is.
//
// At the top of each writable root the plan holds every existing match
// read-only (mounts.Build); everywhere else, and for a name absent when the
// session starts, the after-session walk moves aside what the session made
// or changed (sandbox/guard/nestedrepo_linux.go). No placeholder is made for an
// absent name: a placeholder is an entry Git shows (issue 23).
type Family struct {
	Name     string
	Why      string
	Patterns []string
}

// ProjectFamilies are the persistence families relative to the workdir, to
// every directory a profile's `writable:` or `home.writable` opens, and to
// every directory below them. GitPersist (the repository's own hooks and
// config) is apart: the walk judges a .git as a repository.
//
// Peer sandboxes' lists are a floor, all covered: srt's dangerous files and
// directories (.gitconfig, .bashrc, .bash_profile, .zshrc, .zprofile,
// .profile, .ripgreprc, .mcp.json, .vscode, .idea, .claude/commands,
// .claude/agents, .git/hooks, .git/config) but .gitmodules (see
// GitPersist), and Codex's read-only subpaths of a writable root (.git,
// .codex, .agents).
var ProjectFamilies = []Family{
	{
		Name: "git hook managers",
		Why:  "a git hook manager runs the commands its config names on the user's next commit, push or checkout (the repository's installed hook calls it)",
		Patterns: []string{
			// husky: core.hooksPath=.husky/_, scripts .husky/<hook>
			".husky",
			// lefthook: lefthook.{yml,yaml,json,toml}, the dot forms, the
			// -local overrides (meant to be untracked), .config/ forms and
			// the script folders
			"lefthook.y*ml", ".lefthook.y*ml", "lefthook-local.y*ml", ".lefthook-local.y*ml",
			"lefthook.json*", ".lefthook.json*", "lefthook-local.json*", ".lefthook-local.json*",
			"lefthook.toml", ".lefthook.toml", "lefthook-local.toml", ".lefthook-local.toml",
			".config/lefthook.y*ml", ".config/lefthook-local.y*ml", ".config/lefthook.json*", ".config/lefthook-local.json*",
			".config/lefthook.toml", ".config/lefthook-local.toml",
			".lefthook", ".lefthook-local",
			// pre-commit: local hooks' entry commands; a hook repository's
			// own manifest
			".pre-commit-config.*", ".pre-commit-hooks.*",
			// overcommit and its repo hook folder
			".overcommit.*", ".git-hooks",
			// simple-git-hooks, CaptainHook, a conventional hooks folder
			".simple-git-hooks.*js*", "simple-git-hooks.*js*", "captainhook.json", ".githooks",
		},
	},
	{
		Name: "other version control systems",
		Why:  "Mercurial's hgrc [hooks] and [extensions], Jujutsu's repo config (aliases, fix tools, pager) and Sapling's config run commands on the user's next hg, jj or sl; a sharedpath or a .jj/repo file redirects to a repository of the agent's",
		Patterns: []string{
			".hg/hgrc*", ".hg/sharedpath",
			".jj/repo/config*",
			".sl/config*", ".sl/sharedpath",
		},
	},
	{
		Name: "package managers and tool version managers",
		Why:  "the next package manager or toolchain command runs what these name: npm/pnpm node-options, script-shell and onload-script; yarn's yarnPath, plugins and releases; a pnpmfile's hooks; bun's preload; cargo's rustc-wrapper, runner and linker; a rust-toolchain path; mise's hooks and env on cd, tool versions taken from a path; Maven extensions and JVM options; the Gradle wrapper's distribution; Bazel's workspace_status_command and run_under",
		Patterns: []string{
			".npmrc",
			".yarnrc", ".yarnrc.*", ".yarn/releases", ".yarn/plugins",
			".pnpmfile.*", "pnpm-workspace.yaml",
			"bunfig.toml", ".bunfig.toml",
			".cargo/config", ".cargo/config.*", "rust-toolchain", "rust-toolchain.toml",
			"mise.toml", "mise.*.toml", ".mise.toml", ".mise.*.toml", ".mise/config*.toml", "mise/config*.toml",
			".config/mise.toml", ".config/mise.*.toml", ".config/mise", ".rtx.toml", ".rtx.*.toml", ".tool-versions",
			".mvn", "gradle/wrapper",
			".bazelrc", "*.bazelrc", ".bazeliskrc",
		},
	},
	{
		Name: "direnv and shells",
		Why:  "direnv runs .envrc (and what it sources) on the user's next cd; a shell startup file in a project is sourced by the user or a dotfiles manager",
		Patterns: []string{
			".envrc", ".envrc.*",
			".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zprofile", ".zshenv", ".zlogin",
		},
	},
	{
		Name: "agents' project config and skills",
		Why:  "the user's next agent started in this folder runs the hooks, MCP servers, plugins, commands and skills its project config names",
		Patterns: []string{
			".mcp.json",
			// Claude Code: settings (hooks, statusLine), commands, subagents,
			// hook scripts, skills
			".claude/settings*.json", ".claude/commands", ".claude/agents", ".claude/hooks", ".claude/skills", ".claude/plugins",
			// Codex, Gemini CLI, Cursor, Qwen Code
			".codex", ".gemini", ".cursor", ".qwen",
			// the shared agent-skill folders
			".agents", ".github/skills", ".github/agents", ".github/hooks",
			// aider: lint-cmd, test-cmd
			".aider.conf.*",
			// opencode: MCP servers, JS plugins, commands
			"opencode.json", "opencode.jsonc", ".opencode.json", ".opencode",
			// Kiro hooks and MCP, Windsurf workflows, Cline rules, workflows
			// and hooks, Continue, Roo, Kilo Code, Junie, Augment, Trae, Crush
			".kiro", ".windsurf", ".clinerules", ".cline", ".continue", ".roo", ".roomodes", ".kilocode",
			".junie", ".augment", ".trae", "crush.json", ".crush.json",
		},
	},
	{
		Name: "editors, debuggers and interpreters",
		Why:  "an editor opening the folder runs its tasks, language servers and extensions' commands; a debugger or REPL started here sources its local rc file; pylint's init-hook runs on the editor's next lint",
		Patterns: []string{
			".vscode", "*.code-workspace", ".idea", ".fleet", ".zed", ".helix",
			".devcontainer", ".devcontainer.json",
			".nvim.lua", ".nvimrc", ".exrc", ".vimrc", ".gvimrc", ".dir-locals.el", ".dir-locals-2.el",
			".pdbrc", ".irbrc", ".pryrc", ".gdbinit", ".lldbinit",
			// interpreters that source an rc file of the folder they start
			// in: R and Rscript (and RStudio opening it), Octave, GHCi, the
			// OCaml toplevel, Erlang's erl, IEx
			".Rprofile", ".Renviron", ".octaverc", ".ghci", ".ocamlinit", ".erlang", ".iex.exs",
			".pylintrc", "pylintrc",
			".ripgreprc", ".gitconfig",
		},
	},
	{
		Name:     "fedmem",
		Why:      "fedmem project profiles (.fedmem/profiles/NAME.yaml): a planted one decides what the next session's agent may touch",
		Patterns: []string{".fedmem"},
	},
}

// InstructionFiles are the files the user's next agent reads as
// instructions. They run nothing by themselves and are ordinary project
// content agents are asked to edit, so they are not held: when the session
// made or changed one, fedmem-run says so after it (the report's warnings,
// one stderr line). A profile with `instructions: read-only` holds them as
// a persistence family instead.
var InstructionFiles = Family{
	Name: "instructions for the next agent",
	Why:  "the user's next agent reads it as instructions",
	Patterns: []string{
		"CLAUDE.md", "CLAUDE.local.md", ".claude/CLAUDE.md", ".claude/rules",
		"AGENTS.md", "AGENTS.override.md", "AGENT.md", "GEMINI.md", "QWEN.md",
		".cursorrules", ".windsurfrules", ".roorules*", ".goosehints", ".rules",
		".github/copilot-instructions.md", ".github/instructions", ".github/prompts",
	},
}

// Pattern is one compiled pattern of a Family.
type Pattern struct {
	Path   string // as written
	Family *Family
	segs   []string // lower-case
}

// Len is the number of segments.
func (p *Pattern) Len() int { return len(p.segs) }

// MatchSeg reports whether name matches segment i, without regard to case.
func (p *Pattern) MatchSeg(i int, name string) bool {
	return matchLower(p.segs[i], strings.ToLower(name))
}

func matchLower(seg, lname string) bool {
	if !strings.ContainsAny(seg, `*?[\`) {
		return seg == lname
	}
	ok, _ := path.Match(seg, lname)
	return ok
}

// Why is the family's reason.
func (p *Pattern) Why() string { return p.Family.Name + ": " + p.Family.Why }

// PatternSet indexes patterns by their first segment.
type PatternSet struct {
	all     []*Pattern
	literal map[string][]*Pattern
	glob    []*Pattern
}

// NewPatternSet compiles the families' patterns.
func NewPatternSet(fams ...*Family) *PatternSet {
	s := &PatternSet{literal: map[string][]*Pattern{}}
	for _, f := range fams {
		for _, raw := range f.Patterns {
			p := &Pattern{Path: raw, Family: f, segs: strings.Split(strings.ToLower(raw), "/")}
			s.all = append(s.all, p)
			if strings.ContainsAny(p.segs[0], `*?[\`) {
				s.glob = append(s.glob, p)
			} else {
				s.literal[p.segs[0]] = append(s.literal[p.segs[0]], p)
			}
		}
	}
	return s
}

// All is every pattern of the set.
func (s *PatternSet) All() []*Pattern { return s.all }

// First returns the patterns whose first segment matches name.
func (s *PatternSet) First(name string) []*Pattern {
	l := strings.ToLower(name)
	out := s.literal[l]
	for _, p := range s.glob {
		if matchLower(p.segs[0], l) {
			if len(out) == len(s.literal[l]) {
				out = append([]*Pattern{}, out...)
			}
			out = append(out, p)
		}
	}
	return out
}

// Match returns the first pattern that names the slash-separated relative
// path rel exactly, or nil.
func (s *PatternSet) Match(rel string) *Pattern {
	parts := strings.Split(rel, "/")
	for _, p := range s.First(parts[0]) {
		if p.Len() != len(parts) {
			continue
		}
		ok := true
		for i := 1; i < len(parts); i++ {
			if !p.MatchSeg(i, parts[i]) {
				ok = false
				break
			}
		}
		if ok {
			return p
		}
	}
	return nil
}

// ProjectPatterns are the compiled ProjectFamilies, with InstructionFiles
// when instructionsReadOnly.
func ProjectPatterns(instructionsReadOnly bool) *PatternSet {
	fams := make([]*Family, 0, len(ProjectFamilies)+1)
	for i := range ProjectFamilies {
		fams = append(fams, &ProjectFamilies[i])
	}
	if instructionsReadOnly {
		fams = append(fams, &InstructionFiles)
	}
	return NewPatternSet(fams...)
}

// InstructionPatterns are the compiled InstructionFiles.
func InstructionPatterns() *PatternSet { return NewPatternSet(&InstructionFiles) }
