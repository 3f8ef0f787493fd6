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
	if err := checkWorkdir(in); err != nil {
		t.Errorf("workdir inside the vault: %v", err)
	}
}
