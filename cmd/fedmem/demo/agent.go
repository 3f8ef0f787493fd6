package demo

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"
)

// AgentScript is the hostile agent script the demo runs inside fedmem-run.
//
//go:embed agent.sh
var AgentScript string

// Result is one line the agent script reported.
type Result struct {
	Expect, Outcome, Label, Detail string
}

// AgentRun is what the agent's run under fedmem-run gave.
type AgentRun struct {
	Results []Result
	Stdout  string
	Stderr  string
	Err     error // fedmem-run's exit
}

// AgentEnv is the agent's environment: env without HOME and the FEDMEM_*
// session variables, with HOME set to the demo home.
func AgentEnv(env []string, home string) []string {
	return append(WithoutEnv(env, "HOME", "FEDMEM_VAULT", "FEDMEM_INBOX", "FEDMEM_SESSION"), "HOME="+home)
}

// AgentCommand is the fedmem-run command that runs the agent script.
func AgentCommand(ctx context.Context, l Layout, runBin string, agentArgs, env []string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, runBin, append(agentArgs, "--report", l.Report, "--", "/bin/sh", "-c", AgentScript, "fedmem-demo-agent")...)
	cmd.Dir = l.Work
	cmd.Env = env
	if l.TwoUsers {
		// Root launches; the agent user's primary group is the agents'
		// group: that is what lets it reach its session in 90-inbox/
		// (mode 03770), which root creates for it.
		cmd.SysProcAttr = credential(0, 0, AgentGID)
	}
	cmd.Stdin = nil
	return cmd
}

// RunAgent runs the agent script under fedmem-run within timeout. A failed
// run is reported on w; it is an error only when the agent reported nothing.
func RunAgent(ctx context.Context, l Layout, runBin string, agentArgs, env []string, timeout time.Duration, w io.Writer) (AgentRun, error) {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := AgentCommand(rctx, l, runBin, agentArgs, env)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	run := AgentRun{Results: ParseOutput(stdout.Bytes()), Stdout: stdout.String(), Stderr: stderr.String(), Err: runErr}
	if runErr != nil {
		fmt.Fprintf(w, "fedmem-run failed: %v\n%s\n", runErr, indent(run.Stderr, "  | "))
		if len(run.Results) == 0 {
			return run, fmt.Errorf("fedmem-run did not run the agent: %w", runErr)
		}
	}
	return run, nil
}

// ParseOutput reads the agent script's FEDMEM-DEMO lines.
func ParseOutput(b []byte) []Result {
	var out []Result
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), "\t", 5)
		if len(f) != 5 || f[0] != "FEDMEM-DEMO" {
			continue
		}
		out = append(out, Result{Expect: f[1], Outcome: f[2], Label: f[3], Detail: f[4]})
	}
	return out
}

// SessionFromInfo is the session id the agent saw, from its info lines.
func SessionFromInfo(info []Result) string {
	for _, r := range info {
		if _, s, ok := strings.Cut(r.Detail, "session="); ok {
			return strings.Fields(s + " ")[0]
		}
	}
	return ""
}

// Attempts are the agent's results by kind.
type Attempts struct {
	Blocked []Result // must fail, failed
	Leaked  []Result // must fail, did not
	Allowed []Result // may succeed
	Info    []Result // what the agent saw
}

// Classify sorts the agent's results by kind, in their order.
func Classify(results []Result) Attempts {
	var a Attempts
	for _, r := range results {
		switch {
		case r.Expect == "blocked" && r.Outcome == "failed":
			a.Blocked = append(a.Blocked, r)
		case r.Expect == "blocked":
			a.Leaked = append(a.Leaked, r)
		case r.Expect == "allowed":
			a.Allowed = append(a.Allowed, r)
		default:
			a.Info = append(a.Info, r)
		}
	}
	return a
}

// PrintAttempts prints sections 1 to 3 (what the agent is, what it could
// not do, what it could) and reports whether any of it failed the demo.
// stdout is the agent's, quoted when it reported no attempt.
func PrintAttempts(w io.Writer, a Attempts, stdout string) (failed bool) {
	fmt.Fprintf(w, "1. What the agent is (as it sees itself)\n")
	for _, r := range a.Info {
		fmt.Fprintf(w, "   %-28s %s\n", r.Label, r.Detail)
	}

	fmt.Fprintf(w, "\n2. Attempts that must fail: %d blocked, %d NOT blocked\n", len(a.Blocked), len(a.Leaked))
	for _, r := range a.Leaked {
		failed = true
		fmt.Fprintf(w, "   NOT BLOCKED  %s\n                %s\n", r.Label, r.Detail)
	}
	for _, r := range a.Blocked {
		fmt.Fprintf(w, "   blocked  %s\n            %s\n", r.Label, r.Detail)
	}
	if len(a.Blocked)+len(a.Leaked) == 0 {
		failed = true
		fmt.Fprintf(w, "   the agent reported no attempt at all (stdout: %q)\n", firstLines(stdout, 3))
	}

	fmt.Fprintf(w, "\n3. What it was allowed to do\n")
	for _, r := range a.Allowed {
		mark := "ok    "
		if r.Outcome != "ok" {
			mark = "FAILED"
			failed = true
		}
		fmt.Fprintf(w, "   %s %s  %s\n", mark, r.Label, r.Detail)
	}
	return failed
}

// explainMounts prints the mount table `fedmem-run --explain` shows for the
// run about to start (its session id differs: explain makes its own). It is
// informative only; a failure is reported and the demo goes on.
func explainMounts(ctx context.Context, w io.Writer, runBin string, args []string, l Layout, env []string) {
	cmd := exec.CommandContext(ctx, runBin, append(append([]string{}, args...), "--explain", "--", "/bin/sh")...)
	cmd.Dir = l.Work
	cmd.Env = env
	if l.TwoUsers {
		cmd.SysProcAttr = credential(0, 0, AgentGID)
	}
	out, err := cmd.Output()
	if err != nil {
		fmt.Fprintf(w, "0. (fedmem-run --explain failed: %v)\n\n", err)
		return
	}
	var table []string
	in := false
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "KIND") {
			in = true
		}
		if in && strings.TrimSpace(line) == "" {
			break
		}
		if in {
			table = append(table, strings.TrimRight(line, " "))
		}
	}
	if len(table) == 0 {
		return
	}
	fmt.Fprintf(w, "0. The sandbox it runs in (fedmem-run --explain; the session directory name differs per run)\n%s\n", indent(strings.Join(table, "\n"), "   "))
}
