package mounts

import (
	"errors"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/mounts/request"
)

func TestSystemFolder(t *testing.T) {
	for p, want := range map[string]string{
		"/":                      "/",
		"/etc":                   "/etc",
		"/etc/cron.d":            "/etc",
		"/usr":                   "/usr",
		"/usr/local":             "/usr",
		"/usr/local/bin":         "/usr",
		"/usr/lib/systemd":       "/usr",
		"/var":                   "/var/spool",
		"/var/lib":               "/var",
		"/var/spool/cron":        "/var/spool",
		"/boot":                  "/boot",
		"/run/user/1000":         "/run",
		"/lib64":                 "/lib64",
		"/usr/src/app":           "",
		"/usr/src":               "",
		"/usr/local/src/project": "",
		"/var/lib/jenkins/ws":    "/var",
		"/var/lib/cloud/scripts": "/var",
		"/opt/containerd/bin":    "/opt",
		"/var/www/html":          "/var",
		"/var/tmp/build":         "",
		"/opt/app":               "/opt",
		"/srv/project":           "",
		"/home/alice/src":        "",
		"/root/project":          "",
		"/work/main":             "",
		"/etcetera":              "",
		"/usrx":                  "",
	} {
		got, ok := systemFolder(p, "")
		if ok != (want != "") || got != want {
			t.Errorf("systemFolder(%q) = %q, %v; want %q", p, got, ok, want)
		}
	}
	// A daemon tree holds the caller's own home's projects (a CI user's
	// HOME=/var/lib/jenkins), never its dot-entries nor a system tree.
	for p, want := range map[string]string{
		"/var/lib/jenkins/workspace/job": "",
		"/var/lib/jenkins/.config":       "/var",
		"/var/lib/jenkins":               "/var",
		"/var/lib/other/x":               "/var",
	} {
		if got, _ := systemFolder(p, "/var/lib/jenkins"); got != want {
			t.Errorf("systemFolder(%q, HOME /var/lib/jenkins) = %q, want %q", p, got, want)
		}
	}
	if got, ok := systemFolder("/usr/sbin/x", "/usr/sbin"); !ok || got != "/usr" {
		t.Errorf("a HOME in a system tree exempted %q: %q, %v", "/usr/sbin/x", got, ok)
	}
}

// A workdir in the system's tree is refused before any mount, naming the
// rule; one inside the vault (read-only) is not.
func TestBuildRefusesSystemWorkdir(t *testing.T) {
	in := Input{Vault: "/srv/vault", Home: "/root", Session: "20261203T083439Z-7ab06a3e"}
	for _, wd := range []string{"/", "/etc", "/usr/local", "/var"} {
		in.Workdir = wd
		_, err := Build(request.Request{}, in)
		if !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), "rule: workdir-system") || !strings.Contains(err.Error(), wd) {
			t.Errorf("workdir %s: %v, want ErrPlan naming it and workdir-system", wd, err)
		}
	}
	in.Workdir = "/srv/vault/10-projects"
	if err := checkWorkdir(request.Request{}, in); err != nil {
		t.Errorf("workdir inside the vault: %v", err)
	}
}

// The home rules: another account's home or a folder holding one is no
// workdir (workdir-other-home), nor is a home's dot-entry or a folder in
// one (workdir-home-config); the caller's home, a project in any home and
// a proposed workdir are.
func TestBuildRefusesHomeWorkdir(t *testing.T) {
	in := Input{Vault: "/srv/vault", Home: "/home/alice", Session: "20261203T083439Z-7ab06a3e",
		Homes: []string{"/root", "/home/alice", "/home/bob", "/srv/vault/home-inside"}}
	refused := map[string]string{
		"/root":                            "workdir-other-home",
		"/home/bob":                        "workdir-other-home",
		"/home":                            "workdir-other-home",
		"/home/alice/.ssh":                 "workdir-home-config",
		"/home/alice/.config/systemd/user": "workdir-home-config",
		"/home/bob/.config/autostart":      "workdir-home-config",
		"/root/.local/share/fedmem/x":      "workdir-home-config",
	}
	for wd, rule := range refused {
		in.Workdir = wd
		_, err := Build(request.Request{}, in)
		if !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), "rule: "+rule) || !strings.Contains(err.Error(), wd) {
			t.Errorf("workdir %s: %v, want ErrPlan naming it and %s", wd, err, rule)
		}
		if err := checkWorkdir(request.Request{ProposeWorkdir: true}, in); err != nil {
			t.Errorf("proposed workdir %s: %v, want no home rule", wd, err)
		}
	}
	for _, wd := range []string{"/home/alice", "/home/alice/src/app", "/home/bob/src/app", "/root/proj", "/srv/vault/10-projects", "/tmp/build"} {
		in.Workdir = wd
		if err := checkWorkdir(request.Request{}, in); err != nil {
			t.Errorf("workdir %s: %v, want allowed", wd, err)
		}
	}
	// Without Homes, the caller's own dot-entries are still refused.
	in.Homes, in.Workdir = nil, "/home/alice/.gnupg"
	if err := checkWorkdir(request.Request{}, in); err == nil || !strings.Contains(err.Error(), "workdir-home-config") {
		t.Errorf("workdir in $HOME/.gnupg without Homes: %v", err)
	}
}

// Every path the mount table shows a folder at is judged with it; the Git
// folder, PATH and HOME rules; the profile's writable paths too.
func TestBuildRefusesWritableElsewhere(t *testing.T) {
	base := Input{Vault: "/srv/vault", Home: "/home/alice", Session: "20261203T083439Z-7ab06a3e",
		Homes: []string{"/root", "/home/alice"}, PathDirs: []string{"/home/alice/bin", "/usr/bin"}}
	aliases := map[string][]Alias{
		"/srv/etc-copy": {{Path: "/etc", As: "/etc"}},
		"/mnt/data":     {{Path: "/home", As: "/home", Holds: true}},
		"/mnt/me":       {{Path: "/home/alice", As: "/home/alice", Holds: true}},
		"/srv/proj":     {{Path: "/srv/proj-alias", As: "/srv/proj-alias"}},
	}
	base.Aliases = func(p string) []Alias { return aliases[p] }
	bare := map[string]bool{"/srv/git/app.git/HEAD": false, "/srv/git/app.git/objects": true, "/srv/git/app.git/refs": true}
	base.Exists = func(p string) (bool, bool) {
		isDir, ok := bare[p]
		if ok {
			return true, isDir
		}
		for _, sfx := range []string{"/HEAD", "/objects", "/refs", "/etc", "/usr"} {
			if strings.HasSuffix(p, sfx) {
				return strings.HasPrefix(p, "/srv/chroot/"), true
			}
		}
		return true, true
	}
	for _, c := range []struct{ wd, writable, home, rule string }{
		{"/srv/etc-copy", "", "", "workdir-system"},
		{"/mnt/data", "", "", "workdir-other-home"},
		{"/mnt/me", "", "", "workdir-other-home"},
		{"/home/alice/src/app/.git", "", "", "workdir-git-dir"},
		{"/home/alice/src/app/.git/hooks", "", "", "workdir-git-dir"},
		{"/srv/git/app.git", "", "", "workdir-git-dir"},
		{"/srv/git/app.git/hooks", "", "", "workdir-git-dir"},
		{"/home/alice/bin", "", "", "workdir-on-path"},
		{"/root/bin", "", "", "workdir-on-path"},
		{"/root/bin/sub", "", "", "workdir-on-path"},
		{"/srv/proj", "/home/alice/.config/systemd/user", "", "workdir-home-config"},
		{"/srv/proj", "/opt/containerd", "", "workdir-system"},
		{"/srv/proj", "", "/etc", "home-system"},
		{"/srv/chroot", "", "", "workdir-system"},
		{"/srv/chroot/etc/cron.d", "", "", "workdir-system"},
	} {
		in := base
		in.Workdir = c.wd
		if c.home != "" {
			in.Home = c.home
		}
		var rq request.Request
		if c.writable != "" {
			rq.Writable = []string{c.writable}
		}
		_, err := Build(rq, in)
		if !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), "rule: "+c.rule) {
			t.Errorf("workdir %s, writable %q, HOME %q: %v, want ErrPlan naming %s", c.wd, c.writable, c.home, err, c.rule)
		}
	}
	for _, dirs := range [][]string{{"/usr/bin", ""}, {".", "/usr/bin"}, {"./"}} {
		in := base
		in.Workdir, in.PathDirs = "/srv/proj", dirs
		if err := checkWorkdir(request.Request{}, in); err == nil || !strings.Contains(err.Error(), "rule: workdir-on-path") {
			t.Errorf("PATH %q (a relative entry): %v, want workdir-on-path", dirs, err)
		}
	}
	for _, wd := range []string{"/srv/proj", "/home/alice/src/app", "/home/alice/src/app/.github", "/srv/git/app"} {
		in := base
		in.Workdir = wd
		if err := checkWorkdir(request.Request{}, in); err != nil {
			t.Errorf("workdir %s: %v, want allowed", wd, err)
		}
	}
}

// A folder holding a bare repository (a Git server's /srv/git) is no
// workdir; one holding a work tree's .git or a plain folder named x.git
// is.
func TestBuildRefusesBareRepoHolder(t *testing.T) {
	bare := map[string]bool{"/srv/git/proj.git/HEAD": false, "/srv/git/proj.git/objects": true, "/srv/git/proj.git/refs": true}
	in := Input{Vault: "/srv/vault", Home: "/home/alice", Session: "20261203T083439Z-7ab06a3e",
		Exists: func(p string) (bool, bool) {
			if isDir, ok := bare[p]; ok {
				return true, isDir
			}
			return false, false
		},
		List: func(dir string) ([]string, error) {
			return map[string][]string{"/srv/git": {"proj.git", "README"}, "/srv/site": {".git", "assets.git", "src"}}[dir], nil
		}}
	in.Workdir = "/srv/git"
	if err := checkWorkdir(request.Request{}, in); err == nil || !strings.Contains(err.Error(), "rule: workdir-git-dir") || !strings.Contains(err.Error(), "/srv/git/proj.git") {
		t.Errorf("workdir /srv/git: %v, want workdir-git-dir naming proj.git", err)
	}
	in.Workdir = "/srv/site"
	if err := checkWorkdir(request.Request{}, in); err != nil {
		t.Errorf("workdir /srv/site: %v, want allowed", err)
	}
}

// A home.writable entry that is a link is judged by where it leads: into
// the home's non-dot entries or another writable entry, yes; another
// dot-entry, out of the home, or a system folder, no.
func TestBuildHomeWritableLinks(t *testing.T) {
	links := map[string]string{
		"/home/alice/.claude":      "/home/alice/dotfiles/claude",
		"/home/alice/.cache/pip":   "/etc/cron.d",
		"/home/alice/.codex":       "/home/alice/.config/systemd/user",
		"/home/alice/.aider":       "/data/aider",
		"/home/alice/.local/state": "/home/alice/.cache/state",
	}
	in := Input{Vault: "/srv/vault", Home: "/home/alice", Workdir: "/srv/proj", Session: "20261203T083439Z-7ab06a3e",
		RealPath: func(p string) string {
			if r, ok := links[p]; ok {
				return r
			}
			return p
		}}
	for _, c := range []struct {
		writable []string
		rule     string
	}{
		{[]string{".claude/"}, ""},
		{[]string{".local/state/", ".cache/"}, ""},
		{[]string{".cache/pip/"}, "workdir-system"},
		{[]string{".codex/"}, "home-writable-link"},
		{[]string{".aider/"}, "home-writable-link"},
	} {
		var rq request.Request
		rq.Home.Writable = c.writable
		err := checkWorkdir(rq, in)
		if (c.rule == "") != (err == nil) || (c.rule != "" && !strings.Contains(err.Error(), "rule: "+c.rule)) {
			t.Errorf("home.writable %q: %v, want rule %q", c.writable, err, c.rule)
		}
	}
}

// A mirror of the root or an alias of the home is hidden inside, unless
// it lies in a tree the plan hides already (the private /tmp, /run) and
// no bind shows it again.
func TestHomeAliasesHidden(t *testing.T) {
	in := Input{Vault: "/srv/vault", Home: "/home/alice", Workdir: "/srv/proj", Session: "20261203T083439Z-7ab06a3e",
		Mirrors: []string{"/mnt/view", "/tmp/ctrd/rootfs", "/run/containerd/x/rootfs"},
		Aliases: func(p string) []Alias {
			if p == "/home/alice" {
				return []Alias{{Path: "/mnt/data/home/alice", As: "/mnt/data/home/alice"}}
			}
			return nil
		}}
	pl, err := Build(request.Request{}, in)
	if err != nil {
		t.Fatal(err)
	}
	hidden := map[string]bool{}
	for _, m := range pl.Mounts {
		if m.Kind == Hidden {
			hidden[m.Target] = true
		}
	}
	for p, want := range map[string]bool{"/mnt/view": true, "/mnt/data/home/alice": true, "/tmp/ctrd/rootfs": false, "/run/containerd/x/rootfs": false} {
		if hidden[p] != want {
			t.Errorf("%s hidden: %v, want %v", p, hidden[p], want)
		}
	}
}
