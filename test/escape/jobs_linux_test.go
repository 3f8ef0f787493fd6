package escape

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fedmem/fedmem/test/testutil"
)

// TestJobControlSuspendResume suspends the whole of fedmem-run with Ctrl-Z
// from the user's shell, resumes it with fg, then interrupts the agent: the
// user's shell must get its terminal back while suspended, and the agent
// must run again after fg (a stopped agent that never resumes would hang
// fedmem-run forever).
func TestJobControlSuspendResume(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	m := testutil.StartTmux(t, "bash --norc --noprofile -i")
	m.WaitFor(regexp.MustCompile(`bash-[0-9.]+[#$] `), 30*time.Second)
	m.Send(e.launch("sleep", "300"), "Enter")
	time.Sleep(1500 * time.Millisecond)
	m.Send("C-z")
	m.WaitFor(regexp.MustCompile(`Stopped`), 20*time.Second)
	m.Send("echo SHELL-HAS-TERMINAL; fg", "Enter")
	m.WaitFor(regexp.MustCompile(`(?m)^SHELL-HAS-TERMINAL`), 20*time.Second)
	time.Sleep(1500 * time.Millisecond)
	m.Send("C-c")
	// Type the next command only once the shell prompts again: until
	// fedmem-run has exited, its relay reads the terminal and would take
	// the line for the agent.
	prompt := regexp.MustCompile(`(?s)SHELL-HAS-TERMINAL.*\^C.*\n?bash-[0-9.]+[#$] ?$`)
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if prompt.MatchString(strings.TrimRight(m.Capture(), " \n")+" ") || prompt.MatchString(strings.TrimRight(m.Capture(), " \n")) {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the shell never prompted again after Ctrl-C; pane:\n%s", m.Capture())
		}
	}
	m.Send(`echo "RC=$?"`, "Enter")
	g := m.WaitFor(regexp.MustCompile(`(?m)^RC=(\d+)`), 30*time.Second)
	if g[1] != "130" {
		t.Fatalf("after Ctrl-Z, fg and Ctrl-C fedmem-run exited %s, want 130 (SIGINT reached the resumed agent); pane:\n%s", g[1], m.Capture())
	}
}

// TestWindowResize changes the terminal size while the agent runs: the
// agent's pty must follow (SIGWINCH relayed as TIOCSWINSZ).
func TestWindowResize(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	m := testutil.StartTmux(t, e.launch("bash", "--norc", "--noprofile", "-i")+"; echo FEDMEM-EXIT=$?")
	m.WaitFor(regexp.MustCompile(`bash-[0-9.]+[#$] `), 30*time.Second)
	m.Run("resize-window", "-t", "fedmem", "-x", "97", "-y", "23")
	time.Sleep(1 * time.Second)
	m.Send(`echo "SIZE=$(stty size)"; exit 0`, "Enter")
	g := m.WaitFor(regexp.MustCompile(`(?m)^SIZE=(\d+ \d+)`), 30*time.Second)
	if g[1] != "23 97" {
		t.Fatalf("agent's terminal is %q after resize, want \"23 97\"; pane:\n%s", g[1], m.Capture())
	}
}

// TestRunAsOtherUID: started by root with a profile whose run_as names
// another uid, the agent runs as that uid (in a user namespace, without
// capabilities) and its inbox belongs to it on the host.
func TestRunAsOtherUID(t *testing.T) {
	e := setup(t, layout{name: "gate-owned/root", gateOwned: true})
	prof := filepath.Join(e.outDir, "runas.yaml")
	if err := os.WriteFile(prof, []byte("name: runas\nextends: default\nrun_as: \"64001\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := e.run(t, []string{"--profile", prof}, "sh", "-c", `id -u; grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status; echo d > "$FEDMEM_INBOX/d.md"`)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	out := string(r.stdout)
	if !strings.HasPrefix(out, "64001\n") {
		t.Fatalf("agent uid: want 64001, got:\n%s", out)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n")[1:] {
		if !strings.HasSuffix(l, "0000000000000000") {
			t.Errorf("capabilities not empty: %s", l)
		}
	}
	fi, err := os.Stat(filepath.Join(e.vault.Dir, "90-inbox", r.session, "d.md"))
	if err != nil {
		t.Fatalf("draft: %v", err)
	}
	if uid := statUID(fi); uid != 64001 {
		t.Fatalf("draft owned by uid %d on the host, want 64001", uid)
	}
}

func statUID(fi os.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}
