package escape

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestRT5HomeWritableLinkFollowed: a root caller's earlier (or
// concurrent) session whose profile has home.writable [.cache/] leaves
// ~/.cache/pip a link (root's on disk: its agent's bind is idmapped) to a
// system folder — here a canary standing in for /etc/cron.d. The next
// session's profile has home.writable [.cache/pip/]: pin.Record resolves
// a non-strict source's links once and pins what they lead to, so the
// agent got the link's target writable, idmapped to root. Now a
// home.writable link that leaves the home is refused (rule
// home-writable-link), and one to a system folder by that folder's rule.
func TestRT5HomeWritableLinkFollowed(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	canary := makeCanary(t, e, filepath.Join("sys", "etc", "cron.d"), 0)
	cache := filepath.Join(e.home, ".cache")
	must(t, os.MkdirAll(cache, 0o755))
	must(t, os.Symlink(canary, filepath.Join(cache, "pip")))
	prof := filepath.Join(e.base, "rt5pip.yaml")
	must(t, os.WriteFile(prof, []byte("name: rt5pip\nextends: default\nhome:\n  writable: [.cache/pip/]\n"), 0o644))
	target := filepath.Join(e.home, ".cache", "pip")
	// The plan alone (--explain: no session, nothing written) with the
	// link at the real /etc/cron.d: checkWorkdir judges rq.Writable
	// (RealPath) but never home.writable, so nothing refuses it.
	must(t, os.Remove(filepath.Join(cache, "pip")))
	must(t, os.Symlink("/etc/cron.d", filepath.Join(cache, "pip")))
	x := e.run(t, []string{"--profile", prof, "--explain"}, "true")
	must(t, os.Remove(filepath.Join(cache, "pip")))
	must(t, os.Symlink(canary, filepath.Join(cache, "pip")))
	if x.code == 0 && bytes.Contains(x.stdout, []byte(".cache/pip")) {
		t.Logf("--explain with ~/.cache/pip -> /etc/cron.d: exit 0, not refused:\n%s", grepLines(x.stdout, "pip"))
	} else {
		t.Logf("--explain with ~/.cache/pip -> /etc/cron.d: exit %d\n%s\n%s", x.code, x.stdout, x.stderr)
	}
	r := e.run(t, []string{"--profile", prof}, "sh", "-c", fmt.Sprintf("ls -a %s; cat %s/MARKER; echo planted > %s/probe && echo wrote", target, target, target))
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	if st, err := os.Lstat(filepath.Join(canary, "probe")); err == nil {
		t.Errorf("BREACH: home.writable ~/.cache/pip, a link to %s, was bound writable: the agent wrote %s/probe as uid %d on disk (exit %d)", canary, canary, st.Sys().(*syscall.Stat_t).Uid, r.code)
	} else if r.code != 125 || !bytes.Contains(r.stderr, []byte("rule: home-writable-link")) {
		t.Errorf("nothing landed, but exit %d without rule home-writable-link:\n%s", r.code, r.stderr)
	}
	if x.code != 125 || !bytes.Contains(x.stderr, []byte("rule: workdir-system")) {
		t.Errorf("--explain with ~/.cache/pip -> /etc/cron.d: exit %d, want 125 naming workdir-system:\n%s", x.code, x.stderr)
	}
}

func grepLines(b []byte, w string) string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, w) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
