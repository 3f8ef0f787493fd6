package escape

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/fedmem/fedmem/test/testutil"
)

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// launch is the shell command that starts fedmem-run in the layout.
func (e *env) launch(argv ...string) string { return e.launchWith(nil, argv...) }

// launchWith is launch with fedmem-run flags before the command.
func (e *env) launchWith(flags []string, argv ...string) string {
	parts := []string{"cd", shellQuote(e.workdir), "&&", "env", "-i", "PATH=/usr/bin:/bin", "HOME=" + shellQuote(e.home), "TERM=xterm",
		shellQuote(e.bins.FedmemRun), "--vault", shellQuote(e.vault.Dir), "--workdir", shellQuote(e.workdir)}
	for _, a := range append(testutil.BackendArgs(), flags...) { // FEDMEM_BACKEND's matrix
		parts = append(parts, shellQuote(a))
	}
	parts = append(parts, "--")
	for _, a := range argv {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

// TestPTYInteractive: an interactive shell works under fedmem-run in a real
// terminal — it has a tty, job control, the terminal's size, Ctrl-C reaches
// the foreground job, the session id is set, and its exit code comes back.
func TestPTYInteractive(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	m := testutil.StartTmux(t, e.launch("bash", "--norc", "--noprofile", "-i")+"; echo FEDMEM-EXIT=$?")
	m.WaitFor(regexp.MustCompile(`bash-[0-9.]+[#$] `), 30*time.Second)
	size := strings.TrimSpace(m.Run("display-message", "-p", "-t", "fedmem", "#{pane_height} #{pane_width}"))

	m.Send("stty size; sleep 30", "Enter")
	time.Sleep(700 * time.Millisecond)
	m.Send("C-c")
	m.Send(`echo "INT=$?"`, "Enter")
	m.WaitFor(regexp.MustCompile(`(?m)^INT=\d+`), 20*time.Second)
	m.Send(`tty; echo "S=$FEDMEM_SESSION"; exit 7`, "Enter")
	g := m.WaitFor(regexp.MustCompile(`FEDMEM-EXIT=(\d+)`), 30*time.Second)
	pane := m.Capture()
	t.Logf("pane:\n%s", pane)

	if g[1] != "7" {
		t.Errorf("exit code through fedmem-run = %s, want 7", g[1])
	}
	if !regexp.MustCompile(`(?m)^/dev/pts/\d+\s*$`).MatchString(pane) {
		t.Errorf("`tty` did not print a pty inside the sandbox")
	}
	if s := regexp.MustCompile(`(?m)^S=(\S+)\s*$`).FindStringSubmatch(pane); s == nil || !sessionRe.MatchString(s[1]) {
		t.Errorf("FEDMEM_SESSION not set to a session id inside the sandbox")
	}
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(size) + `\s*$`).MatchString(pane) {
		t.Errorf("`stty size` inside does not match the terminal (%s)", size)
	}
	if !regexp.MustCompile(`(?m)^INT=130\s*$`).MatchString(pane) {
		t.Errorf("Ctrl-C did not interrupt the foreground job (want INT=130)")
	}
	for _, bad := range []string{"no job control", "cannot set terminal process group"} {
		if strings.Contains(pane, bad) {
			t.Errorf("bash says %q: the agent has no controlling terminal of its own", bad)
		}
	}
}

// TestCVE2019_10063_TIOCSTI64bit re-tries the flatpak escape: TIOCSTI
// pushes a command into the terminal's input, to be run by the user's shell
// after the sandbox exits. Flatpak's filter compared the full 64-bit ioctl
// command, so TIOCSTI with high bits set passed (the kernel looks at 32).
// Both forms must be refused, and nothing may reach the outer shell.
func TestCVE2019_10063_TIOCSTI64bit(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	out := filepath.Join(e.workdir, "tiocsti.jsonl")
	m := testutil.StartTmux(t, e.launch(e.bins.Hostile, "tiocsti", "--out", out)+`; echo FEDMEM-EXIT=$?; read -t 3 line; echo "READ=[$line]"`)
	m.WaitFor(regexp.MustCompile(`READ=\[`), 60*time.Second)
	pane := m.Capture()
	t.Logf("pane:\n%s", pane)
	if strings.Contains(pane, "TIOCSTI-ESCAPED-42") || !strings.Contains(pane, "READ=[]") {
		t.Errorf("injected input reached the outer terminal")
	}
	if !strings.Contains(pane, "FEDMEM-EXIT=0") {
		t.Errorf("hostile tiocsti did not exit 0")
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := parseResults(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"tiocsti", "tiocsti-64bit", "tioclinux", "tioclinux-64bit"} {
		got := find(rs, a)
		if len(got) != 1 {
			t.Errorf("%s: %d results", a, len(got))
			continue
		}
		r := got[0]
		if r.Target != "stdin(tty)" {
			t.Errorf("%s ran on %s, not on a terminal: the test proves nothing", a, r.Target)
		}
		if want := expected[a]; r.OK || !want[r.Errno] {
			t.Errorf("%s on %s: ok=%v errno=%s, want refused with one of %v", a, r.Target, r.OK, r.Errno, keys(want))
		} else {
			t.Logf("%s refused: %s", a, r.Errno)
		}
	}
}
