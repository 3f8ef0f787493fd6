package profiles

import (
	"path"
	"strings"
	"testing"
)

// TestProjectFamiliesMatch: every name of the attack set of issue 22
// ("persistence outside the list") and the peer sandboxes' floor (srt's
// dangerous files and directories, Codex's read-only subpaths) is named by
// a family, at the top and below it (the walk matches relative to each
// directory); project content and agents' own working files are not.
func TestProjectFamiliesMatch(t *testing.T) {
	set := ProjectPatterns(false)
	found := func(rel string) *Pattern {
		// Relative to any directory: try every suffix, as the walk does
		// from each directory on the way.
		parts := strings.Split(rel, "/")
		for i := range parts {
			if m := set.Match(strings.Join(parts[i:], "/")); m != nil {
				return m
			}
			// A pattern may name a directory above the file (.husky).
			for j := len(parts) - 1; j > i; j-- {
				if m := set.Match(strings.Join(parts[i:j], "/")); m != nil {
					return m
				}
			}
		}
		return nil
	}
	for _, rel := range []string{
		// issue 22: the attack set
		"lefthook-local.yml", ".lefthook-local.yml", "lefthook.yaml", ".lefthook.yaml", "lefthook.yml", ".lefthook.yml",
		".hg/hgrc", ".jj/repo/config.toml", ".npmrc", ".yarnrc.yml", ".pnpmfile.cjs", ".cargo/config.toml",
		"mise.toml", ".mise.toml", ".config/mise/config.toml", ".aider.conf.yml", "opencode.json",
		// variants of the same families
		"lefthook-local.json", ".config/lefthook.yml", ".pre-commit-config.yaml", ".pre-commit-config.yml", ".husky/pre-commit",
		".overcommit.yml", ".hg/hgrc-not-shared", ".hg/sharedpath", ".sl/config", ".cargo/config", "rust-toolchain.toml",
		"mise.local.toml", ".mise.local.toml", "mise.dev.toml", ".tool-versions", ".yarnrc", ".yarn/releases/yarn-4.1.0.cjs",
		"bunfig.toml", ".envrc", ".envrc.local", "user.bazelrc", ".bazelrc", ".mvn/extensions.xml",
		".claude/settings.json", ".claude/settings.local.json", ".claude/commands/x.md", ".claude/skills/s/SKILL.md",
		".codex/config.toml", ".agents/skills/x/SKILL.md", ".kiro/hooks/x.json", ".windsurf/workflows/x.md",
		".clinerules/hooks/x", ".continue/config.yaml", ".roo/mcp.json", ".cursor/mcp.json", ".gemini/settings.json",
		".zed/tasks.json", ".vscode/tasks.json", "x.code-workspace", ".idea/workspace.xml", ".devcontainer/devcontainer.json",
		".nvim.lua", ".dir-locals.el", ".fedmem/profiles/x.yaml", ".opencode/plugin/x.js", ".github/hooks/x.json",
		// case folding: .VSCode on a casefold directory is .vscode
		".VSCode/tasks.json", "LEFTHOOK-LOCAL.YML",
		// srt's floor (.gitmodules excepted on purpose: GitPersist) and Codex's
		".gitconfig", ".bashrc", ".bash_profile", ".zshrc", ".zprofile", ".profile", ".ripgreprc", ".mcp.json",
		".claude/agents/x.md",
	} {
		for _, at := range []string{rel, "sub/deep/" + rel} {
			if found(at) == nil {
				t.Errorf("%s: no persistence family names it", at)
			}
		}
	}
	for _, rel := range []string{
		"README.md", "src/main.go", "Makefile", "package.json", "Cargo.toml", "go.mod", ".gitignore", ".gitattributes",
		".gitmodules", ".aider.chat.history.md", ".aider.input.history", ".aider.tags.cache.v3/x", ".claude/CLAUDE.md",
		"CLAUDE.md", "AGENTS.md", ".hg/store/data/x.i", ".jj/repo/store/x", ".cargo/registry/x", ".yarn/cache/x.zip",
		"docs/lefthook.md", ".github/workflows/ci.yml", "node_modules/x/index.js",
	} {
		if m := found(rel); m != nil {
			t.Errorf("%s: taken for persistence by %q (%s)", rel, m.Path, m.Family.Name)
		}
	}
	for _, f := range ProjectFamilies {
		if f.Name == "" || f.Why == "" || len(f.Patterns) == 0 {
			t.Errorf("family %+v: every family has a name, a why and patterns", f)
		}
		for _, p := range f.Patterns {
			for _, seg := range strings.Split(p, "/") {
				if _, err := path.Match(seg, ""); err != nil || seg == "" || seg == "." || seg == ".." {
					t.Errorf("family %s: pattern %q: bad segment %q (%v)", f.Name, p, seg, err)
				}
			}
			if strings.HasPrefix(p, ".git/") || p == ".git" {
				t.Errorf("family %s: %q belongs to GitPersist (the walk judges .git as a repository)", f.Name, p)
			}
		}
	}
}

// TestInstructionFilesMatch: the files the next agent reads as
// instructions are reported, not held, unless the profile says read-only.
func TestInstructionFilesMatch(t *testing.T) {
	in := InstructionPatterns()
	for _, rel := range []string{"CLAUDE.md", "AGENTS.md", "GEMINI.md", ".cursorrules", ".github/copilot-instructions.md", "claude.md"} {
		if in.Match(rel) == nil {
			t.Errorf("%s: not an instruction file", rel)
		}
		if ProjectPatterns(false).Match(rel) != nil {
			t.Errorf("%s: held by default; instructions are reported, not held", rel)
		}
		if ProjectPatterns(true).Match(rel) == nil {
			t.Errorf("%s: not held under instructions: read-only", rel)
		}
	}
}

// TestInstructionsSetting: the profile key takes report or read-only, and a
// child cannot loosen a parent's read-only.
func TestInstructionsSetting(t *testing.T) {
	bad, err := Parse("t", []byte("name: t\ninstructions: readonly\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), `instructions: "readonly" is not report or read-only`) {
		t.Errorf("bad value: %v", err)
	}
	parent := &Profile{Name: "p", Instructions: InstructionsReadOnly}
	if m := merge(parent, &Profile{Name: "c", Instructions: InstructionsReport}); m.Instructions != InstructionsReadOnly {
		t.Errorf("child loosened read-only to %q", m.Instructions)
	}
	if m := merge(&Profile{Name: "p"}, &Profile{Name: "c", Instructions: InstructionsReadOnly}); m.Instructions != InstructionsReadOnly {
		t.Errorf("child's read-only lost: %q", m.Instructions)
	}
}
