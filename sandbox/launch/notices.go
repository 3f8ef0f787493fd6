package launch

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/fedmem/fedmem/sandbox/netproxy"
)

// notices holds what fedmem-run has to tell the user about a session until
// the agent has exited. The agent owns the terminal while it runs: a line
// written there by fedmem-run (a refused CONNECT, a warning) lands in the
// middle of a full-screen program's display — Claude Code's or Codex's —
// and is drawn over or scrolls the screen. So nothing is written to stderr
// from the start of the session until the agent is gone: each event goes
// to --events at once and to the report, and the user gets the warnings
// and one summary line after the agent exits (issue 23, item 5;
// TestPTYNoDiagnosticsWhileAgentRuns).
type notices struct {
	mu sync.Mutex
	// done: the summary was written; what arrives later (a proxy
	// connection still closing) goes to --events only.
	done bool
	// warnings are said in full, one line each, after the agent exits;
	// lines likewise, as "fedmem-run: <line>" (the credentials' end).
	warnings []string
	lines    []string
	// quiet are warnings the user has seen before (an unchanged built-in
	// profile's own, the same on every run): in the report and --events,
	// only counted on stderr.
	quiet int
	// refused are the proxy's refusals, in order, for the summary.
	refused []string
	nRefuse int
}

// maxRefusedNamed is how many refused connections the summary names.
const maxRefusedNamed = 3

func (n *notices) warn(w string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.warnings = append(n.warnings, w)
}

// say queues a line said after the agent exits, after the warnings.
func (n *notices) say(line string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.lines = append(n.lines, line)
}

func (n *notices) refuse(d netproxy.Decision) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.done {
		return
	}
	n.nRefuse++
	if len(n.refused) < maxRefusedNamed {
		n.refused = append(n.refused, fmt.Sprintf("%s %s:%d (%s)", d.Method, d.Host, d.Port, d.Reason))
	}
}

// flush writes the warnings, then one summary line for everything else
// (refused connections, denials, limits hit, quiet warnings), to w. It is
// called after the agent has exited; a second call writes nothing.
func (n *notices) flush(w io.Writer, session string, denials int, limits []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.done {
		return
	}
	n.done = true
	for _, s := range n.warnings {
		fmt.Fprintf(w, "fedmem-run: warning: %s\n", s)
	}
	for _, s := range n.lines {
		fmt.Fprintf(w, "fedmem-run: %s\n", s)
	}
	var parts []string
	if n.nRefuse > 0 {
		s := fmt.Sprintf("%d network connection(s) refused: %s", n.nRefuse, strings.Join(n.refused, ", "))
		if more := n.nRefuse - len(n.refused); more > 0 {
			s += fmt.Sprintf(" and %d more", more)
		}
		parts = append(parts, s)
	}
	if denials > 0 {
		parts = append(parts, fmt.Sprintf("%d operation(s) refused by the sandbox", denials))
	}
	if len(limits) > 0 {
		parts = append(parts, "limit hit: "+strings.Join(limits, ", "))
	}
	if len(parts) == 0 {
		return
	}
	if n.quiet > 0 {
		parts = append(parts, fmt.Sprintf("%d warning(s) of the profile", n.quiet))
	}
	fmt.Fprintf(w, "fedmem-run: session %s: %s (see --events and the report)\n", session, strings.Join(parts, "; "))
}
