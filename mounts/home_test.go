package mounts

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/profiles"
)

// homePlan builds the default profile's plan for a host with a Git config,
// SSH keys and a docker socket in the home, and sockets and a FIFO in the
// workdir (specials).
func homePlan(t *testing.T, specials func(string) ([]string, error), sockets ...string) (*Plan, error) {
	t.Helper()
	p, _, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	p.UnixSockets = sockets
	dirs := map[string]bool{"/w": true, "/home/u/.ssh": true, "/home/u/.colima": true, "/home/u/.local/bin": true}
	files := map[string]bool{"/home/u/.gitconfig": true, "/home/u/.colima/docker.sock": true, "/w/s.sock": true, "/w/listed.sock": true}
	return Build(p.PlanRequest(), Input{Vault: "/v", Session: "s1", Workdir: "/w", Home: "/home/u",
		Exists:   func(p string) (bool, bool) { return dirs[p] || files[p], dirs[p] },
		Specials: specials})
}

func planHas(pl *Plan, k Kind, target string) bool {
	return slices.ContainsFunc(pl.Mounts, func(m Mount) bool { return m.Kind == k && m.Target == target })
}

// TestBuildHomeAllowlist: the home is an empty read-only tmpfs holding the
// profile's home.show entries; what it does not name (the SSH keys, the
// docker socket) is neither bound nor masked — it does not exist inside.
// The workdir's sockets and FIFO are masked unless unix_sockets lists
// them; a socket listed under the home is bound back into it.
func TestBuildHomeAllowlist(t *testing.T) {
	scanned := map[string]bool{}
	pl, err := homePlan(t, func(root string) ([]string, error) {
		scanned[root] = true
		if root == "/w" {
			return []string{"/w/s.sock", "/w/fifo", "/w/listed.sock"}, nil
		}
		return nil, nil
	}, "/w/listed.sock", "/home/u/.colima/docker.sock")
	if err != nil {
		t.Fatal(err)
	}
	if !pl.HomeAllowlist || !planHas(pl, Hidden, "/home/u") {
		t.Fatalf("home is not an allow-list tmpfs: %+v", pl.Mounts)
	}
	for _, w := range []struct {
		k    Kind
		t    string
		want bool
	}{
		{BindRO, "/home/u/.gitconfig", true},
		{BindRO, "/home/u/.local/bin", true},
		{Masked, "/home/u/.ssh", false},
		{BindRO, "/home/u/.colima/docker.sock", true},
		{Masked, "/w/s.sock", true},
		{Masked, "/w/fifo", true},
		{Masked, "/w/listed.sock", false},
	} {
		if planHas(pl, w.k, w.t) != w.want {
			t.Errorf("%s %s in plan: %v, want %v", w.k, w.t, !w.want, w.want)
		}
	}
	for _, r := range []string{"/w", "/home/u/.gitconfig", "/home/u/.local/bin"} {
		if !scanned[r] {
			t.Errorf("%s not scanned for sockets", r)
		}
	}
	if scanned["/v"] {
		t.Error("the vault was scanned (it is the gate's)")
	}
}

// TestBuildSpecialsFailClosed: a scan that fails (its bound passed, a
// directory it cannot list) refuses the plan.
func TestBuildSpecialsFailClosed(t *testing.T) {
	boom := errors.New("more entries than the scan reads")
	_, err := homePlan(t, func(string) ([]string, error) { return nil, boom })
	if !errors.Is(err, ErrPlan) {
		t.Fatalf("want ErrPlan, got %v", err)
	}
}

// TestBuildHomeInWorkdir: a workdir that is the home shows it whole
// (writable, secrets masked, as before), with no allow-list tmpfs beneath
// it that its seal would turn the workdir read-only through; the plan
// says so.
func TestBuildHomeInWorkdir(t *testing.T) {
	p, _, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]bool{"/home/u": true, "/home/u/.ssh": true}
	pl, err := Build(p.PlanRequest(), Input{Vault: "/v", Session: "s1", Workdir: "/home/u", Home: "/home/u",
		Exists: func(p string) (bool, bool) { return dirs[p], dirs[p] }})
	if err != nil {
		t.Fatal(err)
	}
	if pl.HomeAllowlist || planHas(pl, Hidden, "/home/u") {
		t.Fatalf("an allow-list under the workdir: %+v", pl.Mounts)
	}
	if !planHas(pl, BindRW, "/home/u") || !planHas(pl, Masked, "/home/u/.ssh") {
		t.Fatalf("the home as workdir, secrets masked: %+v", pl.Mounts)
	}
	if !slices.ContainsFunc(pl.Warnings, func(w string) bool { return strings.Contains(w, "not as an allow-list") }) {
		t.Errorf("no warning: %v", pl.Warnings)
	}
}

// TestBuildHomeShowLink: a shown entry that is a symbolic link (a dotfiles
// checkout) is bound from what it points to, with that one's kind.
func TestBuildHomeShowLink(t *testing.T) {
	p, _, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	dirs := map[string]bool{"/w": true, "/home/u/dotfiles/bin": true}
	pl, err := Build(p.PlanRequest(), Input{Vault: "/v", Session: "s1", Workdir: "/w", Home: "/home/u",
		Exists: func(p string) (bool, bool) { return dirs[p] || p == "/home/u/.local/bin", dirs[p] },
		RealPath: func(p string) string {
			if p == "/home/u/.local/bin" {
				return "/home/u/dotfiles/bin"
			}
			return p
		}})
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(pl.Mounts, func(m Mount) bool { return m.Target == "/home/u/.local/bin" })
	if i < 0 || pl.Mounts[i].Source != "/home/u/dotfiles/bin" || !pl.Mounts[i].Dir || pl.Mounts[i].Kind != BindRO {
		t.Fatalf("linked entry: %+v", pl.Mounts)
	}
}
