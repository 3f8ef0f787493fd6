package mounts

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/fedmem/fedmem/mounts/families"
)

// configured is one path that the user's own configuration names as code
// to run later (a Git hooks directory, a command's script): it joins the
// persistence candidates, so it stays read-only wherever it lies in a
// writable path (guarantee 6).
type configured struct {
	path string
	p    families.Persist
}

// maxIncludes bounds Git's include chain (Git itself stops at 10).
const maxIncludes = 10

// configuredRunLater reads, through in.ReadFile, the Git config files the
// user's git will read in the workdir (system, global, the repository's own
// and every include.path / includeIf.*.path, whatever its condition) and
// Claude Code's settings (~/.claude/settings*.json, the project's
// .claude/settings*.json, ~/.claude.json and .mcp.json), and returns what
// they name as code: core.hooksPath, include targets, and the script paths
// in command values (core.fsmonitor, core.sshCommand, pagers, editors,
// aliases starting with '!', filter/diff/merge drivers, credential
// helpers; statusLine.command, hooks' commands, MCP servers' command and
// args). A Git file it cannot parse is an error naming file and line:
// fedmem-run cannot tell which hooks it names (fail closed).
func configuredRunLater(in Input, exists func(string) (bool, bool)) ([]configured, []string, error) {
	if in.ReadFile == nil {
		return nil, nil, nil
	}
	var out []configured
	var warnings []string
	add := func(p string, dir bool, why string) {
		out = append(out, configured{filepath.Clean(p), families.Persist{Path: p, Dir: dir, Why: why}})
	}
	top, gitdir, common := findRepo(in, exists)
	if top == "" {
		top = in.Workdir
	}
	files := []string{"/etc/gitconfig", filepath.Join(in.Home, ".gitconfig"), filepath.Join(in.Home, ".config/git/config")}
	if gitdir != "" {
		files = append(files, filepath.Join(common, "config"), filepath.Join(gitdir, "config.worktree"))
	}
	seen := map[string]bool{}
	var walk func(file string, depth int) error
	walk = func(file string, depth int) error {
		if seen[file] || depth > maxIncludes {
			return nil
		}
		seen[file] = true
		data, err := in.ReadFile(file)
		if errors.Is(err, fs.ErrPermission) {
			// git, as the same user, cannot read it either and goes on.
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: git config %s: %v (fedmem-run cannot tell which commands it names)", ErrPlan, file, err)
		}
		if data == nil {
			return nil // absent: git reads nothing from it either
		}
		ents, err := ParseGitConfig(data)
		if err != nil {
			return fmt.Errorf("%w: git config %s: %v (fedmem-run cannot tell which commands it names)", ErrPlan, file, err)
		}
		for _, e := range ents {
			name := e.Section + "." + e.Key
			switch {
			case e.Key == "path" && (e.Section == "include" || e.Section == "includeif"):
				t := expandHome(e.Value, in.Home)
				if !filepath.IsAbs(t) {
					t = filepath.Join(filepath.Dir(file), t)
				}
				add(t, false, fmt.Sprintf("git config included by %s:%d", file, e.Line))
				if err := walk(filepath.Clean(t), depth+1); err != nil {
					return err
				}
			case name == "core.hookspath":
				t := expandHome(e.Value, in.Home)
				if !filepath.IsAbs(t) {
					t = filepath.Join(top, t)
				}
				add(t, true, fmt.Sprintf("git hooks directory (core.hooksPath, %s:%d)", file, e.Line))
			case gitCommandKey(e):
				v := e.Value
				if e.Section == "alias" {
					if !strings.HasPrefix(v, "!") {
						continue
					}
					v = v[1:]
				}
				if e.Section == "credential" && !strings.HasPrefix(v, "!") && !strings.Contains(v, "/") {
					continue // a helper name: git-credential-NAME on PATH
				}
				for _, t := range commandPaths(strings.TrimPrefix(v, "!"), top, in.Home, "", exists) {
					add(t, false, fmt.Sprintf("script of %s (%s:%d)", e.Name(), file, e.Line))
				}
			}
		}
		return nil
	}
	for _, f := range files {
		if err := walk(f, 0); err != nil {
			return nil, nil, err
		}
	}
	for _, f := range []string{
		filepath.Join(in.Home, ".claude/settings.json"), filepath.Join(in.Home, ".claude/settings.local.json"),
		filepath.Join(in.Home, ".claude.json"),
		filepath.Join(in.Workdir, ".claude/settings.json"), filepath.Join(in.Workdir, ".claude/settings.local.json"),
		filepath.Join(in.Workdir, ".mcp.json"),
	} {
		data, err := in.ReadFile(f)
		if err != nil || data == nil {
			continue
		}
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			// Claude Code ignores a settings file it cannot parse: it runs
			// none of its commands either.
			warnings = append(warnings, fmt.Sprintf("%s is not JSON (%v): the commands it may name are not held read-only", f, err))
			continue
		}
		for _, c := range jsonCommands(v, "") {
			for _, t := range commandPaths(c, in.Workdir, in.Home, in.Workdir, exists) {
				add(t, false, "script named by "+f)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out, warnings, nil
}

// findRepo finds the repository the workdir belongs to: the nearest .git
// (a directory, or a gitdir file as in a linked worktree) at or above it,
// and its common directory.
func findRepo(in Input, exists func(string) (bool, bool)) (top, gitdir, common string) {
	for d := in.Workdir; ; d = filepath.Dir(d) {
		g := filepath.Join(d, ".git")
		if ok, isDir := exists(g); ok {
			top, gitdir = d, g
			if !isDir {
				data, err := in.ReadFile(g)
				rest, found := strings.CutPrefix(strings.TrimSpace(string(data)), "gitdir:")
				if err != nil || !found {
					return d, "", ""
				}
				gitdir = strings.TrimSpace(rest)
				if !filepath.IsAbs(gitdir) {
					gitdir = filepath.Join(d, gitdir)
				}
			}
			common = gitdir
			if data, err := in.ReadFile(filepath.Join(gitdir, "commondir")); err == nil && data != nil {
				c := strings.TrimSpace(string(data))
				if !filepath.IsAbs(c) {
					c = filepath.Join(gitdir, c)
				}
				common = filepath.Clean(c)
			}
			return top, filepath.Clean(gitdir), common
		}
		if d == "/" || d == in.Home {
			return "", "", ""
		}
	}
}

// gitCommandKey reports whether a Git config key's value is a command.
func gitCommandKey(e GitConfigEntry) bool {
	switch e.Section + "." + e.Key {
	case "core.fsmonitor":
		switch strings.ToLower(e.Value) {
		case "true", "false", "yes", "no", "on", "off", "1", "0", "":
			return false
		}
		return true
	case "core.sshcommand", "core.pager", "core.editor", "core.askpass", "sequence.editor",
		"diff.external", "gpg.program", "interactive.difffilter", "web.browser",
		"uploadpack.packobjectshook", "credential.helper":
		return true
	}
	switch {
	case e.Section == "alias", e.Section == "pager":
		return true
	case e.Section == "filter" && (e.Key == "clean" || e.Key == "smudge" || e.Key == "process"):
		return true
	case e.Section == "diff" && (e.Key == "textconv" || e.Key == "command"):
		return true
	case e.Section == "merge" && e.Key == "driver", e.Section == "gpg" && e.Key == "program",
		e.Section == "credential" && e.Key == "helper", e.Key == "cmd" && (e.Section == "browser" || e.Section == "man" || e.Section == "difftool" || e.Section == "mergetool"):
		return true
	}
	return false
}

// jsonCommands returns every string under a "command" key and every string
// of an "args" list, anywhere in v (statusLine.command, hooks' commands,
// mcpServers' command and args).
func jsonCommands(v any, key string) []string {
	var out []string
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			out = append(out, jsonCommands(c, k)...)
		}
	case []any:
		for _, c := range x {
			out = append(out, jsonCommands(c, key)...)
		}
	case string:
		if key == "command" || key == "args" {
			out = append(out, x)
		}
	}
	return out
}

// commandPaths returns the absolute paths of the words of a shell command
// that name files: absolute, ~/, $HOME/, $CLAUDE_PROJECT_DIR/ (project),
// ./ and ../ (relative to dir), and other relative words with a slash whose
// first component exists in dir (an argument like s/a/b/ is not taken for
// a script). Existing directories are skipped (cd targets, not code).
func commandPaths(cmd, dir, home, project string, exists func(string) (bool, bool)) []string {
	var out []string
	words := strings.FieldsFunc(cmd, func(r rune) bool {
		return strings.ContainsRune(" \t\n;&|()<>`'\"=", r)
	})
	for _, w := range words {
		if project != "" {
			for _, v := range []string{"${CLAUDE_PROJECT_DIR}", "$CLAUDE_PROJECT_DIR"} {
				if strings.HasPrefix(w, v+"/") {
					w = project + w[len(v):]
				}
			}
		}
		w = expandHome(w, home)
		if !strings.Contains(w, "/") || strings.Contains(w, "://") || strings.ContainsAny(w, "$*?[") {
			continue
		}
		if !filepath.IsAbs(w) {
			if !strings.HasPrefix(w, "./") && !strings.HasPrefix(w, "../") {
				first, _, _ := strings.Cut(w, "/")
				if ok, _ := exists(filepath.Join(dir, first)); !ok {
					continue
				}
			}
			w = filepath.Join(dir, w)
		}
		w = filepath.Clean(w)
		if ok, isDir := exists(w); ok && isDir {
			continue
		}
		out = append(out, w)
	}
	return out
}

func expandHome(p, home string) string {
	for _, h := range []string{"~/", "$HOME/", "${HOME}/"} {
		if strings.HasPrefix(p, h) {
			return path.Join(home, p[len(h):])
		}
	}
	return p
}
