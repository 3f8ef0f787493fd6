package families

// Persist is one name that makes a tool run code later, outside the sandbox.
type Persist struct {
	Path string // relative, slash-separated
	Dir  bool
	Why  string
}

// GitPersist are relative to the workdir and to every directory a
// profile's `writable:` opens: the repository's hooks and config. They are
// exact names, held read-only by the plan at the top of each root; an
// absent one (or an absent .git as a whole) is held by a read-only
// placeholder, which Git never shows: it lists no entry named .git and
// nothing inside one. Below the top the after-session walk judges every
// .git (sandbox/guard/nestedrepo_linux.go).
//
// Not listed, on purpose: .gitattributes and .gitmodules. Attributes only
// name filter, diff and merge drivers; the commands are defined in Git's
// config (protected here, and the user's own ~/.gitconfig is read-only), so
// an attribute cannot make Git run anything the user did not configure.
// .gitmodules' `update = !cmd` is ignored by Git when it comes from that file
// (CVE-2019-19604). Both are ordinary project content agents edit.
var GitPersist = []Persist{
	{".git/hooks", true, "git hooks run on the user's next commit, checkout, merge"},
	{".git/config", false, "git config runs commands: core.hooksPath, core.fsmonitor, core.sshCommand, core.pager, alias.*, filter/diff drivers, include.path"},
	{".git/info", true, "git info/attributes and info/sparse-checkout"},
	{".git/config.worktree", false, "per-worktree git config"},
	{".git/worktrees", true, "linked worktrees' commondir and config.worktree"},
	{".git/modules", true, "submodules' hooks and config"},
}

// AfterSession are relative to the same directories as GitPersist:
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
	{".claude/plugins", true, "Claude Code plugins: their hooks, commands, agents and MCP servers run in the user's next claude"},
	{".claude/skills", true, "Claude Code skills: instructions and scripts the user's next claude follows and runs"},
	{".local/share/claude", true, "Claude Code's native install: versions/<v> is the binary ~/.local/bin/claude links to"},
	{".local/bin", true, "the user's own commands, first on PATH"},
	{".codex/config.toml", false, "Codex config: MCP servers, notify command"},
	{".config/fedmem", true, "the user's fedmem profiles (~/.config/fedmem/profiles): a planted one decides what the next session's agent may touch"},
}
