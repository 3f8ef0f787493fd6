package mounts

import (
	"strings"
	"testing"

	"github.com/fedmem/fedmem/profiles"
)

// TestLocalGitPath: which Git URLs name a folder of this host.
func TestLocalGitPath(t *testing.T) {
	for url, want := range map[string]string{
		"/srv/vault.git":            "/srv/vault.git",
		"file:///srv/vault.git":     "/srv/vault.git",
		"../vault-remote.git":       "/base/vault-remote.git",
		"./x/../y.git":              "/base/vault/y.git",
		"https://git.example/v.git": "",
		"ssh://git@host/v.git":      "",
		"git@host:team/vault.git":   "",
		"host:vault.git":            "",
		"":                          "",
	} {
		if got := localGitPath(url, "/base/vault"); got != want {
			t.Errorf("localGitPath(%q) = %q, want %q", url, got, want)
		}
	}
}

// TestVaultCopiesMasked: the vault's local remote and alternate are
// masked in the plan; a network remote is not; a remote that holds the
// workdir stays (it cannot be hidden without hiding the workdir) and a
// warning says so.
func TestVaultCopiesMasked(t *testing.T) {
	tree := []string{"/w/", "/home/u/", "/v/", "/v/.git/", "/srv/v.git/", "/srv/alt/objects/", "/"}
	files := map[string]string{
		"/v/.git/config":                  "[remote \"origin\"]\n\turl = /srv/v.git\n[remote \"hub\"]\n\turl = git@github.com:team/v.git\n[remote \"up\"]\n\tpushurl = file:///\n",
		"/v/.git/objects/info/alternates": "/srv/alt/objects\n",
	}
	p, _, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	read := func(p string) ([]byte, error) {
		if c, ok := files[p]; ok {
			return []byte(c), nil
		}
		return nil, nil // absent
	}
	pl, err := Build(p.PlanRequest(), Input{Vault: "/v", Session: "s1", Workdir: "/w", Home: "/home/u", Exists: fakeHost(tree...), List: fakeList(tree...), ReadFile: read})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"/srv/v.git", "/srv/alt/objects"} {
		if !planHas(pl, Masked, want) {
			t.Errorf("%s, a copy the vault's Git names, is not masked", want)
		}
	}
	for _, m := range pl.Mounts {
		if m.Kind == Masked && (m.Target == "/" || strings.Contains(m.Target, "github")) {
			t.Errorf("masked %s", m.Target)
		}
	}
	if !strings.Contains(strings.Join(pl.Warnings, "\n"), "names /, which holds the vault") {
		t.Errorf("no warning for the remote that holds the vault: %v", pl.Warnings)
	}
}
