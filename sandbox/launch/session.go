package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fedmem/fedmem/mounts/pin"
	"github.com/fedmem/fedmem/profiles"
	"github.com/fedmem/fedmem/sandbox"
	"github.com/fedmem/fedmem/sandbox/credentials"
	"github.com/fedmem/fedmem/sandbox/netproxy"
	"github.com/fedmem/fedmem/sandbox/propose"
	"github.com/fedmem/fedmem/vault"
)

// session is one run's state as run goes through its steps: what the
// session prepares on the host, what it tells the user after the agent
// (notices) and what it writes in the report.
type session struct {
	o       *Options
	r       *Resolved
	ev      *events
	rep     *Report
	stderr  io.Writer
	environ []string
	nt      *notices
	// pathDropped: the caller's PATH entries fedmem-run does not use for
	// its own programs (useHostPATH).
	pathDropped []string

	// agentStarted: the init said every layer is in place ("started").
	agentStarted atomic.Bool
	// warnMu guards rep.Warnings and instructions against the backend's
	// events.
	warnMu       sync.Mutex
	instructions []string // instruction files the session changed

	creds *credentials.Session // nil without credentials
	ctl   *netControl          // nil without the proxy
}

// planWithGateState makes sure the gate's state directory exists (it is
// masked in the plan only when it does): when it was just created, the
// session is planned again, same session id.
func planWithGateState(o *Options, r *Resolved) (*Resolved, error) {
	created, err := ensureGateState(r.Session)
	if err != nil {
		return nil, staged(StageState, err)
	}
	if !created {
		return r, nil
	}
	o2 := *o
	o2.Session = r.ID
	return Resolve(&o2)
}

// queueWarnings puts the plan's warnings in the notices: the built-in
// profile's own are only counted (fedmem profile check says them).
func (ss *session) queueWarnings() {
	s := ss.r.Session
	for i, w := range s.Warnings {
		if i < s.ProfileWarnings && s.ProfileSourceKind == "builtin" {
			ss.nt.quiet++
			continue
		}
		ss.nt.warn(w)
	}
}

// prepareHostPaths creates the writable home paths the profile names (they
// must exist to be bound) and the per-profile state: its store and mount
// points, seeded copies.
func (ss *session) prepareHostPaths() error {
	s, prof := ss.r.Session, ss.r.Profile
	for _, m := range s.Plan.Mounts {
		if m.Create {
			if err := createOwned(m.Source, m.Dir, s.OwnerUID, s.OwnerGID); err != nil {
				return staged(StageState, fmt.Errorf("profile %s: create %s: %w", prof.Name, m.Source, err))
			}
		}
	}
	stateWarnings, err := prepareState(s.Plan, s.Home, s.OwnerUID, s.OwnerGID, s.UID)
	if err != nil {
		return staged(StageState, fmt.Errorf("profile %s: %w", prof.Name, err))
	}
	// The folders just made are pinned too; those pinned with the plan
	// must still be the same (mounts/pin).
	if err := pin.Record(s.Plan, nil); err != nil {
		return staged(StageLaunch, err)
	}
	for _, w := range stateWarnings {
		ss.nt.warn(w)
		ss.rep.Warnings = append(ss.rep.Warnings, w)
	}
	return nil
}

// makeInbox checks the agent can reach the vault's inbox and creates the
// session's folder in it.
func (ss *session) makeInbox() error {
	s := ss.r.Session
	if err := checkInboxReachable(s.Vault, s.UID, s.GID); err != nil {
		return staged(StageInbox, err)
	}
	dir, err := createInbox(s.Vault, s.Plan.Inbox, s.UID)
	if err != nil {
		return staged(StageInbox, err)
	}
	ss.r.Spec.InboxDir = dir // bound by the backend, not by name; closed by run
	return nil
}

// dropUnstarted removes the session's folder of a run refused after
// makeInbox, before its agent started (a mount, identity or verification
// failure: 125; a command that is not there: 127): they piled up in
// 90-inbox/ after refused runs (issue 23). "started" is the init's word
// that every layer is in place, just before it executes the agent; without
// it nothing of the agent ever ran, and the folder is removed only if it
// is empty (rmdir), so nothing written is lost.
func (ss *session) dropUnstarted() {
	inbox := ss.r.Session.Plan.Inbox
	if !ss.agentStarted.Load() && !ss.rep.InboxRemoved && removeUnstartedInbox(inbox, ss.r.Spec.InboxDir) {
		ss.rep.InboxRemoved = true
		ss.ev.emit("inbox", map[string]any{"removed": inbox, "reason": "the agent never started"})
	}
}

// attachStdio gives the spec the session's stdio, with a terminal when
// the profile asks for one (tty: auto) and both ends are terminals.
func (ss *session) attachStdio() (*stdio, error) {
	o, spec := ss.o, ss.r.Spec
	stdinF, _ := o.Stdin.(*os.File)
	stdoutF, _ := o.Stdout.(*os.File)
	spec.TTY = ss.r.Profile.TTY == "auto" && isTerminal(stdinF) && isTerminal(stdoutF)
	std, err := attachStdio(o.Stdin, o.Stdout, o.Stderr, spec.TTY)
	if err != nil {
		return nil, err
	}
	spec.Stdin, spec.Stdout, spec.Stderr = std.in, std.out, std.err
	return std, nil
}

// onEvent is the backend's event hook: every event goes to the events
// file; what the after-session sweep moved aside, or could not check, is
// told to the user on stderr (after the agent exits) and in the report's
// warnings, not only in the --events file nobody may be writing
// (TestRedteam5SweepTold): a plant left under a walk bound, or a folder of
// the user's moved aside, must not go unnoticed.
func (ss *session) onEvent(name string, fields map[string]any) {
	if name == "started" {
		ss.agentStarted.Store(true)
	}
	ss.ev.emit(name, fields)
	if name == "instructions" {
		ss.warnMu.Lock()
		defer ss.warnMu.Unlock()
		ss.instructions = append(ss.instructions, fmt.Sprint(fields["path"]))
		return
	}
	if name != "persistence" {
		return
	}
	w := persistenceWarning(fields)
	ss.nt.warn(w)
	ss.warnMu.Lock()
	defer ss.warnMu.Unlock()
	ss.rep.Warnings = append(ss.rep.Warnings, w)
}

// warnLater adds w to the notices and to the report's warnings.
func (ss *session) warnLater(w string) {
	ss.nt.warn(w)
	ss.warnMu.Lock()
	ss.rep.Warnings = append(ss.rep.Warnings, w)
	ss.warnMu.Unlock()
}

// startNetwork starts what the session's network needs: the credentials'
// exchange (its CA in the agent's environment, its watch on ctx) and,
// with a proxied network, the allow-list proxy and `fedmem net allow
// SESSION HOST` from another terminal (netctl). stopNetwork ends them.
func (ss *session) startNetwork(ctx context.Context, secrets []credentials.Secret) (context.Context, error) {
	spec, prof, ev := ss.r.Spec, ss.r.Profile, ss.ev
	if len(secrets) > 0 {
		creds, err := startCredentials(ss.r, secrets, ss.environ, ev.emit)
		if err != nil {
			return ctx, leftOnAgentPath(err, "fedmem-cred", ss.pathDropped)
		}
		ss.creds = creds
		spec.Env = creds.CAEnv(spec.Env)
		ctx = creds.Watch(ctx)
	}
	if !profiles.Proxied(prof.Network) {
		return ctx, nil
	}
	pol, err := policy(prof)
	if err != nil {
		return ctx, err
	}
	spec.Proxy = &netproxy.Proxy{Policy: pol, OnDecision: func(d netproxy.Decision) {
		ev.emit("network", map[string]any{"method": d.Method, "host": d.Host, "port": d.Port, "allowed": d.Allowed, "addr": d.Addr, "reason": d.Reason})
		if !d.Allowed {
			ss.nt.refuse(d)
		}
	}, Credentials: ss.creds.ProxyCredentials(func(name, host string, port int, where string) {
		ev.emit("credential", map[string]any{"credential": name, "host": host, "port": port, "where": where, "allowed": false,
			"reason": "the placeholder of credential " + name + " in " + where + ": refused"})
	})}
	nc, err := startNetControl(ss.r.ID, pol, ev.emit)
	if err != nil {
		ss.warnLater("fedmem net allow is not available for this session: " + err.Error())
	}
	ss.ctl = nc
	return ctx, nil
}

// stopNetwork ends what startNetwork started (each end is idempotent).
func (ss *session) stopNetwork() {
	ss.ctl.close()
	ss.creds.Stop()
}

// collect puts the sandbox's outcome in the report and returns the
// session's exit code: the agent's, or fedmem's error's.
func (ss *session) collect(res *sandbox.Result, runErr error) int {
	rep, s := ss.rep, ss.r.Session
	rep.VaultHeadEnd, _ = vault.ReadHead(s.Vault)
	rep.InboxFiles, rep.InboxTruncated = listInbox(s.Plan.Inbox)
	code := 0
	if res != nil {
		rep.Layers = &res.Layers
		rep.Identity = res.Layers.Identity
		rep.ExitCode, rep.Signal = res.ExitCode, res.Signal
		rep.LimitsHit = res.LimitsHit
		rep.CoversLost = res.CoversLost
		code = res.ExitCode
		var warnings []string
		rep.VaultReads, warnings = vaultReadsOf(res.VaultReads, s.Vault, rep.VaultHeadStart, rep.VaultHeadEnd)
		if rep.VaultReads != nil {
			rep.VaultReadsDigest = rep.VaultReads.Digest
		}
		for _, w := range warnings {
			ss.warnLater(w)
		}
	}
	if runErr != nil {
		code = sandbox.ExitCodeOf(runErr)
		rep.ExitCode = code
		var se *sandbox.Error
		if errors.As(runErr, &se) {
			rep.Error = se
		}
	}
	return code
}

// afterSession is the session's end once the agent has exited: the hosts
// `fedmem net allow` added, the workdir proposal, the credentials' end,
// the instruction files changed, then the notices said, the session
// record ended and the last event.
func (ss *session) afterSession(res *sandbox.Result, runErr error, rewriteRecord bool) {
	rep, s, stderr := ss.rep, ss.r.Session, ss.stderr
	// The hosts `fedmem net allow` added while the agent ran.
	if ss.ctl != nil {
		rep.NetAllowed = ss.ctl.close()
		if len(rep.NetAllowed) > 0 {
			ss.nt.say(fmt.Sprintf("network: fedmem net allow added %s during the session (net-allow events)", strings.Join(rep.NetAllowed, ", ")))
		}
	}
	if res != nil && res.Proposal != nil {
		// The agent's workdir writes, held in the sandbox's overlay,
		// become a branch or patch now (sandbox/launch/propose.go).
		rep.Proposal = propose.Make(res.Proposal, s.Workdir, s.ID, ss.environ, s.Home, propose.UpperFull(res.Proposal))
		res.Proposal.Close()
	} else if s.Plan.ProposedWorkdir() != nil && runErr == nil {
		rep.Proposal = &propose.Proposal{Kind: "kept", Error: "the sandbox handed no proposal back: nothing the agent wrote to the workdir was kept"}
	}
	// The credentials' end (refreshed tokens written back, refusals
	// counted): said after the agent, with the other warnings.
	for _, line := range ss.creds.Finish() {
		ss.nt.say(line)
		rep.Warnings = append(rep.Warnings, line)
	}
	if line := ss.creds.Summary(); line != "" {
		ss.nt.say(line)
		rep.Warnings = append(rep.Warnings, line)
	}
	// The files the user's next agent reads as instructions that the
	// session made or changed: one line after the session, the same in
	// the report (issue 22 item 5).
	ss.warnMu.Lock()
	if w := instructionsWarning(ss.instructions); w != "" {
		fmt.Fprintf(stderr, "fedmem-run: warning: %s\n", w)
		rep.Warnings = append(rep.Warnings, w)
	}
	ss.warnMu.Unlock()
	rep.Denials = ss.ev.counted()
	denied := 0
	if rep.Denials != nil {
		denied = rep.Denials.Total
	}
	// The agent has exited: now the user hears what happened.
	ss.nt.flush(stderr, s.ID, denied, rep.LimitsHit)
	if rep.Proposal != nil {
		fmt.Fprintf(stderr, "fedmem-run: %s\n", rep.Proposal.Summary())
	}
	if rewriteRecord {
		// The end, for the gate: a draft changed in the session folder
		// after it is not the session's (gate/origin/origin.go ForDraft).
		rep.Ended = time.Now().UTC().Format(time.RFC3339Nano)
		writeSessionRecord(s.Vault, rep, stderr)
	}
	ss.dropUnstarted() // before "exit", the last event
	sandbox.Stamp("collected")
	phases, clock := sandbox.EndPhases()
	ss.ev.emit("exit", map[string]any{"exit_code": rep.ExitCode, "signal": rep.Signal, "duration_ms": rep.DurationMS,
		"vault_head_end": rep.VaultHeadEnd, "inbox_files": len(rep.InboxFiles), "error": rep.Error,
		"phases_ms": phases, "clock_ns": clock})
}
