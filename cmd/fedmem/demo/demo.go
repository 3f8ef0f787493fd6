// Package demo is `fedmem demo` as steps: make a fresh vault, a workdir and
// a demo home; run a hostile agent script under fedmem-run; check from
// outside the sandbox that the vault and the host are unchanged; run one
// pass of the gate; print the outcome. cmd/fedmem is its thin command.
//
// The demo runs on the gate's side of the trust boundary: it links the gate
// and vault/repo, and execs fedmem-run (it never links a sandbox backend;
// test/boundary checks cmd/fedmem's graph, this package included).
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Mark is what the agent script writes wherever it can; the demo looks for
// it on the host afterwards.
const Mark = "fedmem-demo-was-here"

// OtherSession is an inbox directory made before the run, standing for
// another agent's session: the demo agent must neither see nor change it.
const OtherSession = "demo-other-session"

// When the demo runs as root it sets the vault up as a real install would: a
// dedicated gate uid (no passwd entry needed) owns the vault, and the inbox
// belongs to an agents' group the gate is a member of, so the gate can claim
// drafts from session directories (mode 2770) that agents own.
//
// As root, fedmem-run never runs the agent as uid 0 (guarantee 5): the demo
// names its agent user with --agent-user, a uid whose primary group is the
// agents' group, as a profile's run_as would in a root install.
const (
	GateUID   = 64290
	AgentGID  = 64291
	AgentUID  = 64292
	AgentUser = "64292:64291"
)

// TrustedProfile is the profile fedmem-run picks for the demo agent; the
// demo policy trusts it (by its built-in hash).
const TrustedProfile = "default"

// ErrFailed says the demo found a protection that did not hold; the account
// printed before it says which.
var ErrFailed = errors.New("demo failed: something that must be blocked was not (see above)")

// Options are the demo's inputs.
type Options struct {
	Dir     string        // parent of the demo's temporary directory
	Keep    bool          // keep the demo directory afterwards
	RunBin  string        // fedmem-run; "" means FindRun's search
	Timeout time.Duration // for the agent run
	Gate    bool          // run one pass of the gate after the agent
	// Self is the fedmem binary the gate runs from as root; "" means this
	// executable (tests set it: their executable is the test binary).
	Self string
	// Reviewer is the reviewer the demo policy names.
	Reviewer string
}

// Run is the whole demo, its account written to w. It returns ErrFailed when
// something that must be blocked was not, another error when the demo could
// not run.
func Run(ctx context.Context, o Options, w io.Writer) error {
	if ctx == nil {
		ctx = context.Background()
	}
	runBin, err := FindRun(o.RunBin)
	if err != nil {
		return err
	}
	l, err := NewLayout(o.Dir, w)
	if err != nil {
		return err
	}
	if !o.Keep {
		defer os.RemoveAll(l.Base)
	}

	// 1. A fresh vault, another session's draft, a workdir and a demo home.
	res, err := MakeVault(l, o.Reviewer)
	if err != nil {
		return err
	}
	if err := MakeHome(l.Home); err != nil {
		return err
	}
	if err := MakeWorkdir(l); err != nil {
		return err
	}
	base, err := TakeBaseline(l.Vault, l.Home)
	if err != nil {
		return err
	}
	agentArgs := l.AgentArgs()
	PrintSetup(w, l, res, runBin, agentArgs, base.Head)
	agentEnv := AgentEnv(os.Environ(), l.Home)
	explainMounts(ctx, w, runBin, agentArgs, l, agentEnv)

	// 2. The agent.
	run, err := RunAgent(ctx, l, runBin, agentArgs, agentEnv, o.Timeout, w)
	if err != nil {
		return err
	}
	att := Classify(run.Results)
	failed := PrintAttempts(w, att, run.Stdout)

	rep, repErr := ReadReport(l.Report)
	session := rep.Session
	if session == "" {
		session = SessionFromInfo(att.Info)
	}
	if PrintInbox(w, l.Vault, session, repErr) {
		failed = true
	}

	// 5. The vault and the host, checked from outside.
	fmt.Fprintf(w, "\n5. The vault outside the inbox, checked from outside the sandbox\n")
	out, err := CheckOutside(l.Vault, base, session)
	if err != nil {
		return err
	}
	if PrintOutside(w, out) {
		failed = true
	}
	if PrintReport(w, l.Report, rep, repErr) {
		failed = true
	}

	// 7. The gate.
	if GateStep(ctx, w, o, l, base.Head) {
		failed = true
	}
	return Finish(w, o.Keep, l.Base, failed)
}

// Finish prints the demo's last lines and turns failed into ErrFailed.
func Finish(w io.Writer, keep bool, base string, failed bool) error {
	fmt.Fprintln(w)
	if keep {
		fmt.Fprintf(w, "The demo files are kept in %s\n", base)
	}
	if failed {
		return ErrFailed
	}
	fmt.Fprintf(w, "RESULT: every write outside the session's inbox was blocked; the vault and the host are unchanged.\n")
	return nil
}

// WithoutEnv returns env without the variables named.
func WithoutEnv(env []string, names ...string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		drop := false
		for _, n := range names {
			if k == n {
				drop = true
			}
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}
