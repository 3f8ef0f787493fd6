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
