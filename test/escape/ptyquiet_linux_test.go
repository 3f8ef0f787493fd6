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

// TestPTYNoDiagnosticsWhileAgentRuns: fedmem-run writes nothing of its own
// into the terminal while the agent runs. A refused CONNECT used to print
// "fedmem-run: network: refused CONNECT …" at once, over a full-screen
// agent's display (Claude Code's, Codex's), and the claude profile's two
// built-in warnings were printed on every launch. Now the pane holds only
// what the agent wrote until it exits, then one summary line naming the
// refusal; the refusal is in --events as it happens.
func TestPTYNoDiagnosticsWhileAgentRuns(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	events := filepath.Join(e.outDir, "events.jsonl")
	// The agent: a CONNECT the proxy refuses (loopback), then it waits
	// for a line from the terminal, so the pane can be read while it runs.
	// A CONNECT by hand to the proxy HTTPS_PROXY names (bash's /dev/tcp:
	// no client needed); the proxy answers 403 and logs the refusal.
	agent := `p=${HTTPS_PROXY#http://}; exec 3<>"/dev/tcp/${p%:*}/${p##*:}" && printf 'CONNECT 127.0.0.1:9 HTTP/1.1\r\nHost: 127.0.0.1:9\r\n\r\n' >&3 && head -c 12 <&3 | tr -d '\r\n' | sed 's/^/ANSWER=/'; echo; echo "CONNECT-DONE"; read line; echo AGENT-END`
	m := testutil.StartTmux(t, "clear; "+e.launchWith([]string{"--profile", "claude", "--events", events}, "bash", "-c", agent)+"; echo FEDMEM-EXIT=$?")
	m.WaitFor(regexp.MustCompile(`CONNECT-DONE`), 60*time.Second)
	// The refusal reached --events before the pane is read: nothing is
	// still on its way to the terminal.
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, _ := os.ReadFile(events)
		if strings.Contains(string(b), `"allowed":false`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no refused network event in %s:\n%s", events, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
	during := m.Capture()
	if !strings.Contains(during, "ANSWER=HTTP/1.1 403") {
		t.Errorf("the proxy did not refuse the CONNECT with 403 (the test proves nothing):\n%s", during)
	}
	if strings.Contains(during, "fedmem-run") || strings.Contains(during, "refused") || strings.Contains(during, "warning") {
		t.Errorf("fedmem-run wrote into the agent's terminal while it ran:\n%s", during)
	}
	m.Send("x", "Enter")
	m.WaitFor(regexp.MustCompile(`FEDMEM-EXIT=\d+`), 30*time.Second)
	pane := m.Capture()
	t.Logf("pane:\n%s", pane)
	after := pane[strings.Index(pane, "AGENT-END"):]
	lines := regexp.MustCompile(`(?m)^fedmem-run: .*$`).FindAllString(after, -1)
	if len(lines) != 1 || !strings.Contains(lines[0], "1 network connection(s) refused: CONNECT 127.0.0.1:9") {
		t.Errorf("after the agent exited, want one summary line naming the refused CONNECT, got %q", lines)
	}
	if strings.Contains(pane[:strings.Index(pane, "AGENT-END")], "fedmem-run") {
		t.Errorf("fedmem-run wrote before the agent ended:\n%s", pane)
	}
}
