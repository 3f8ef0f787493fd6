package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Tmux drives a real terminal for a test: a tmux server on a private
// socket, one session whose pane runs the command under test (kept after it
// ends, so its last screen can be read). Without tmux the test skips, and
// fails under FEDMEM_REQUIRE_ROOT=1 (CI installs it).
type Tmux struct {
	t    testing.TB
	sock string
}

// StartTmux runs cmdline (a shell command) in a 160×50 pane.
func StartTmux(t testing.TB, cmdline string) *Tmux {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("FEDMEM_REQUIRE_ROOT") == "1" {
			t.Fatal("tmux is needed for the terminal tests (apt-get install tmux)")
		}
		t.Skip("tmux not installed")
	}
	m := &Tmux{t: t, sock: fmt.Sprintf("fedmem-test-%d-%d", os.Getpid(), time.Now().UnixNano())}
	m.Run("-f", "/dev/null", "new-session", "-d", "-s", "fedmem", "-x", "160", "-y", "50", cmdline+"; sleep 120")
	t.Cleanup(func() { exec.Command("tmux", "-L", m.sock, "kill-server").Run() })
	return m
}

// Run runs one tmux command against the test's server.
func (m *Tmux) Run(args ...string) string {
	m.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", m.sock}, args...)...).CombinedOutput()
	if err != nil {
		m.t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Capture is the pane's text (with its scroll-back).
func (m *Tmux) Capture() string {
	return m.Run("capture-pane", "-p", "-J", "-t", "fedmem", "-S", "-500")
}

// WaitFor polls the pane until re matches, failing with the pane's text
// after timeout.
func (m *Tmux) WaitFor(re *regexp.Regexp, timeout time.Duration) []string {
	m.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := m.Capture()
		if g := re.FindStringSubmatch(s); g != nil {
			return g
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("terminal never showed %s; pane:\n%s", re, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Send types keys into the pane (tmux send-keys syntax: "Enter", "Escape").
func (m *Tmux) Send(keys ...string) { m.Run(append([]string{"send-keys", "-t", "fedmem"}, keys...)...) }
