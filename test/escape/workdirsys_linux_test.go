package escape

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRedTeamWorkdirSystemFolder: the workdir is the caller's current
// folder unless --workdir names one, and it is bound writable, idmapped to
// the caller on disk: a root caller who starts an agent from /etc (or /, as
// a container's shell starts) handed the agent root's own files — an agent
// there wrote /etc/cron.d/NAME as root:root, a host cron job. The
// workdir must be a project folder: fedmem-run refuses the operating
// system's tree (rule workdir-system) before the agent runs, and nothing
// lands there.
func TestRedTeamWorkdirSystemFolder(t *testing.T) {
	e := setup(t, layout{name: "gate-owned/root", gateOwned: true})
	probe := "fedmem-redteam-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	for _, wd := range []string{"/etc", "/etc/cron.d", "/usr/local", "/var", "/"} {
		target := filepath.Join(wd, probe)
		t.Cleanup(func() { os.Remove(target) })
		r := e.run(t, []string{"--workdir", wd}, "sh", "-c", `echo '* * * * * root id > /tmp/owned' > "$1" && echo written`, "sh", target)
		_, statErr := os.Lstat(target)
		switch {
		case statErr == nil:
			fi, _ := os.Lstat(target)
			t.Errorf("BREACH: workdir %s: the agent wrote %s (mode %v; exit %d)\n%s", wd, target, fi.Mode(), r.code, r.stderr)
		case r.code != 125 || !strings.Contains(string(r.stderr), "rule: workdir-system"):
			t.Errorf("workdir %s: exit %d, want 125 naming rule workdir-system\n%s", wd, r.code, r.stderr)
		default:
			t.Logf("workdir %s: refused: %s", wd, firstLine(r.stderr, "workdir-system"))
		}
	}
}

// workdirRefused runs an agent that writes target from workdir wd and
// asserts fedmem-run refused the session (125, naming rule) and nothing
// landed at target.
func workdirRefused(t *testing.T, e *env, wd, target, rule string) {
	t.Helper()
	t.Cleanup(func() { os.Remove(target) })
	r := e.run(t, []string{"--workdir", wd}, "sh", "-c", `mkdir -p "$(dirname "$1")" && echo '[Service]' > "$1" && echo written`, "sh", target)
	_, statErr := os.Lstat(target)
	switch {
	case statErr == nil:
		t.Errorf("BREACH: workdir %s: the agent wrote %s (exit %d)\n%s", wd, target, r.code, r.stderr)
	case r.code != 125 || !strings.Contains(string(r.stderr), "rule: "+rule):
		t.Errorf("workdir %s: exit %d, want 125 naming rule %s\n%s", wd, r.code, rule, r.stderr)
	default:
		t.Logf("workdir %s: refused: %s", wd, firstLine(r.stderr, rule))
	}
}

// TestRedTeamWorkdirOtherHome: a root caller whose HOME is elsewhere (sudo
// keeping HOME, a CI job's HOME=/tmp/x) and a workdir of /root handed the
// agent root's own home, writable and idmapped to root on disk: the
// read-only top level that protects $HOME's dot-entries (rule
// home-config-readonly) applies to $HOME alone, so the agent wrote
// /root/.NAME — the next root shell's startup file. Another account's
// home, or a folder that holds one (/home), is no workdir: refused (rule
// workdir-other-home) before the agent runs.
func TestRedTeamWorkdirOtherHome(t *testing.T) {
	e := setup(t, layout{name: "gate-owned/root", gateOwned: true})
	if e.home == "/root" {
		t.Fatalf("the suite's HOME is /root: this test needs a HOME elsewhere")
	}
	probe := ".fedmem-redteam-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	workdirRefused(t, e, "/root", filepath.Join("/root", probe), "workdir-other-home")
}

// TestRedTeamWorkdirInHomeConfig: a workdir inside a dot-folder of the
// home (~/.config/systemd/user, ~/.ssh, ~/.config/autostart) is bound
// writable over the home's allow-list, and what the agent writes there
// the user's own session runs later: a user unit written here starts at
// the next login. The home's dot-folders are configuration, not projects:
// refused (rule workdir-home-config) unless the profile says workdir:
// propose (nothing reaches the folder until the user applies it).
func TestRedTeamWorkdirInHomeConfig(t *testing.T) {
	e := setup(t, layout{name: "gate-owned/root", gateOwned: true})
	wd := filepath.Join(e.home, ".config", "systemd", "user")
	if err := os.MkdirAll(wd, 0o755); err != nil {
		t.Fatal(err)
	}
	workdirRefused(t, e, wd, filepath.Join(wd, "fedmem-redteam.service"), "workdir-home-config")
	ssh := filepath.Join(e.home, ".ssh")
	if err := os.MkdirAll(ssh, 0o700); err != nil {
		t.Fatal(err)
	}
	workdirRefused(t, e, ssh, filepath.Join(ssh, "authorized_keys"), "workdir-home-config")
}
