package mounts

import (
	"path/filepath"
	"strings"

	"github.com/fedmem/fedmem/vault"
)

// vaultCopies are the vault's other copies on this host that its own Git
// repository names: the paths of its local remotes (remote.*.url and
// pushurl as a path or file://, after url.<base>.insteadOf rewriting, in
// the config and every file it includes), of its object alternates
// (.git/objects/info/alternates, and theirs) and of its linked worktrees
// (.git/worktrees/*/gitdir). A path that is a clone's .git (or its
// objects) names the clone's work tree too: it holds every note checked
// out. The host root the sandbox shows read-only holds them, and a note
// read there — withheld ones too — is no open of the vault's mounts: the
// read receipt missed it (TestRedTeamReceiptsLocalRemote,
// TestRedTeamReceiptsVaultCopiesUnparsed). Not a list of names: what the
// vault's config says. Copies it does not name (a backup) are the threat
// model's stated limit.
func (b *planBuilder) vaultCopies() []string {
	if b.in.ReadFile == nil {
		return nil
	}
	gitDir := filepath.Join(b.in.Vault, ".git")
	var out []string
	add := func(p string) {
		p = filepath.Clean(p)
		out = append(out, p)
		// A clone's .git, or its objects: the work tree beside it.
		if d := strings.TrimSuffix(p, "/objects"); filepath.Base(d) == ".git" {
			out = append(out, filepath.Dir(d))
		}
	}
	ents := b.gitConfigIncludes(filepath.Join(gitDir, "config"), 0)
	var rewrites [][2]string // insteadOf prefix, base
	for _, e := range ents {
		if e.Section == "url" && e.Key == "insteadof" && e.Value != "" {
			rewrites = append(rewrites, [2]string{e.Value, e.Sub})
		}
	}
	for _, e := range ents {
		if e.Section != "remote" || (e.Key != "url" && e.Key != "pushurl") {
			continue
		}
		for _, u := range rewritten(e.Value, rewrites) {
			if p := localGitPath(u, b.in.Vault); p != "" {
				add(p)
			}
		}
	}
	seen := map[string]bool{}
	var alternates func(objects string, depth int)
	alternates = func(objects string, depth int) {
		if depth > 5 || seen[objects] {
			return
		}
		seen[objects] = true
		data, err := b.in.ReadFile(filepath.Join(objects, "info", "alternates"))
		if err != nil {
			return
		}
		for _, l := range strings.Split(string(data), "\n") {
			if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, "#") {
				continue
			}
			if !filepath.IsAbs(l) {
				l = filepath.Join(objects, l)
			}
			add(l)
			alternates(filepath.Clean(l), depth+1)
		}
	}
	alternates(filepath.Join(gitDir, "objects"), 0)
	if b.in.List != nil {
		names, _ := b.in.List(filepath.Join(gitDir, "worktrees"))
		for _, n := range names {
			data, err := b.in.ReadFile(filepath.Join(gitDir, "worktrees", n, "gitdir"))
			if err != nil || data == nil {
				continue
			}
			// gitdir names the worktree's .git file.
			if p := strings.TrimSpace(string(data)); filepath.IsAbs(p) {
				add(filepath.Dir(p))
			}
		}
	}
	return out
}

// gitConfigIncludes are the entries of the Git config file p and of every
// file it includes (include.path, and includeIf.*.path whatever the
// condition: it may hold), up to a depth Git's own (10).
func (b *planBuilder) gitConfigIncludes(p string, depth int) []GitConfigEntry {
	data, err := b.in.ReadFile(p)
	if err != nil || data == nil || depth > 10 {
		return nil
	}
	ents, _ := ParseGitConfig(data) // a file it cannot parse names nothing here; persistence rules judge it elsewhere
	out := ents
	for _, e := range ents {
		if (e.Section != "include" && e.Section != "includeif") || e.Key != "path" || e.Value == "" {
			continue
		}
		inc := e.Value
		switch {
		case strings.HasPrefix(inc, "~/") && b.in.Home != "":
			inc = filepath.Join(b.in.Home, inc[2:])
		case !filepath.IsAbs(inc):
			inc = filepath.Join(filepath.Dir(p), inc)
		}
		out = append(out, b.gitConfigIncludes(inc, depth+1)...)
	}
	return out
}

// rewritten is url and, when a url.<base>.insteadOf prefix matches it, the
// URL Git uses instead (the longest prefix wins, as in Git).
func rewritten(url string, rewrites [][2]string) []string {
	best := -1
	for i, r := range rewrites {
		if strings.HasPrefix(url, r[0]) && (best < 0 || len(r[0]) > len(rewrites[best][0])) {
			best = i
		}
	}
	if best < 0 {
		return []string{url}
	}
	return []string{url, rewrites[best][1] + strings.TrimPrefix(url, rewrites[best][0])}
}

// localGitPath is the host path a Git URL names, "" for a network URL:
// file://PATH, an absolute path, or a relative one (resolved against the
// repository's folder, as Git resolves it). An scp-like host:path has a
// colon before its first slash.
func localGitPath(url, repo string) string {
	switch {
	case strings.HasPrefix(url, "file://"):
		url = strings.TrimPrefix(url, "file://")
	case strings.Contains(url, "://"):
		return ""
	case strings.Contains(url, ":") && (!strings.Contains(url, "/") || strings.Index(url, ":") < strings.Index(url, "/")):
		return ""
	}
	if url == "" {
		return ""
	}
	if !filepath.IsAbs(url) {
		url = filepath.Join(repo, url)
	}
	return filepath.Clean(url)
}

// addVaultCopyMasks masks each of the vault's other copies (vaultCopies)
// the sandbox would show, unless it holds the vault, the workdir or the
// home (then a warning says it stays readable) or lies in the vault.
func (b *planBuilder) addVaultCopyMasks() {
	in := b.in
	for _, c := range b.vaultCopies() {
		if vault.Within(c, in.Vault) {
			continue // inside the vault: its mounts are marked
		}
		if vault.Within(in.Vault, c) || (in.Workdir != "" && vault.Within(in.Workdir, c)) || (in.Home != "" && vault.Within(in.Home, c)) {
			b.warn("the vault's Git config names %s, which holds the vault, the workdir or the home: it stays readable, and a note read there is not in the read receipt", c)
			continue
		}
		if ok, isDir := b.exists(c); ok {
			b.add(Mount{Kind: Masked, Target: c, Dir: isDir, Why: "a copy of the vault its Git config names (a local remote or alternate): read there, a note would pass the read receipt"})
		}
	}
}
