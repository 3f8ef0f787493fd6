package mounts

import (
	"path/filepath"
	"strings"

	"github.com/fedmem/fedmem/vault"
)

// vaultCopies are the vault's other copies on this host that its own Git
// repository names: the paths of its local remotes (remote.*.url and
// pushurl as a path or file://) and of its object alternates
// (.git/objects/info/alternates). The host root the sandbox shows read-only
// holds them, and a note read there — withheld ones too — is no open of
// the vault's mounts: the read receipt missed it
// (TestRedTeamReceiptsLocalRemote). Not a list of names: what the vault's
// config says. Copies it does not name (a backup) are the threat model's
// stated limit.
func (b *planBuilder) vaultCopies() []string {
	if b.in.ReadFile == nil {
		return nil
	}
	gitDir := filepath.Join(b.in.Vault, ".git")
	var out []string
	if data, err := b.in.ReadFile(filepath.Join(gitDir, "config")); err == nil && data != nil {
		ents, _ := ParseGitConfig(data) // a file it cannot parse names nothing here; persistence rules judge it elsewhere
		for _, e := range ents {
			if e.Section != "remote" || (e.Key != "url" && e.Key != "pushurl") {
				continue
			}
			if p := localGitPath(e.Value, b.in.Vault); p != "" {
				out = append(out, p)
			}
		}
	}
	objects := filepath.Join(gitDir, "objects")
	if data, err := b.in.ReadFile(filepath.Join(objects, "info", "alternates")); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if l = strings.TrimSpace(l); l == "" || strings.HasPrefix(l, "#") {
				continue
			}
			if !filepath.IsAbs(l) {
				l = filepath.Join(objects, l)
			}
			out = append(out, filepath.Clean(l))
		}
	}
	return out
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
