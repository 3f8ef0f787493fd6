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
		"/var/lib":               "/var/lib/dpkg",
		"/var/spool/cron":        "/var/spool",
		"/boot":                  "/boot",
		"/run/user/1000":         "/run",
		"/lib64":                 "/lib64",
		"/usr/src/app":           "",
		"/usr/src":               "",
		"/usr/local/src/project": "",
		"/var/lib/jenkins/ws":    "",
		"/var/tmp/build":         "",
		"/opt/app":               "",
		"/srv/project":           "",
		"/home/alice/src":        "",
		"/root/project":          "",
		"/work/main":             "",
		"/etcetera":              "",
		"/usrx":                  "",
	} {
		got, ok := systemFolder(p)
		if ok != (want != "") || got != want {
			t.Errorf("systemFolder(%q) = %q, %v; want %q", p, got, ok, want)
		}
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
