package launch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/profiles"
	"github.com/fedmem/fedmem/profiles/resolve"
	"github.com/fedmem/fedmem/sandbox"
	"github.com/fedmem/fedmem/sandbox/netproxy"
	"github.com/fedmem/fedmem/vault"
)

// Resolved is one session ready to run: the pure resolution (profile, plan,
// identity) and the sandbox.Spec built from it. Spec's stdio, Event and
// Proxy are filled in by Run.
type Resolved struct {
	*resolve.Session
	Spec *sandbox.Spec
	// FSDenialsWhy says what set Spec.FSDenials (the flag, the
	// environment or the default), for --explain.
	FSDenialsWhy string
}

// Resolve computes the session without changing anything on the host.
func Resolve(o *Options) (*Resolved, error) {
	if len(o.Argv) == 0 && !o.Explain {
		return nil, staged(StageFlags, errors.New("no command given (usage: fedmem-run [flags] [--] CMD [ARGS…])"))
	}
	s, err := resolve.Resolve(o.resolveOptions())
	if err != nil {
		return nil, err
	}
	if vault.DefaultAgentTakesGroup(s.IdentitySource) && !s.Placeholder {
		// A root caller's default agent (uid 65533, or the fedmem-agent
		// account) is in no group of the vault's, and a vault whose inbox
		// only its agent group may enter (fedmem init --agent-group, mode
		// 03770) refused it. It runs with that group as its gid.
		if g, ok := vault.AgentGroup(s.Vault); ok {
			s.GID = g
		}
	}
	environ := o.Environ
	if environ == nil {
		environ = os.Environ()
	}
	fsDen, fsWhy, err := o.fsDenials()
	if err != nil {
		return nil, err
	}
	p := s.Profile
	spec := &sandbox.Spec{
		Plan: s.Plan, Argv: p.CommandArgs.Apply(o.Argv), Env: Env(p, s.Plan, s.Home, environ), Dir: s.Workdir,
		UID: s.UID, GID: s.GID, IdentitySource: s.IdentitySource,
		OwnerUID: s.OwnerUID, OwnerGID: s.OwnerGID, OwnerSet: true,
		AcceptRisks:     p.AcceptRisks,
		Hostname:        "fedmem",
		RequireLandlock: s.Plan.Require.Landlock,
		RequireSeccomp:  s.Plan.Require.Seccomp,
		FSDenials:       fsDen,
		Receipts:        receiptMode(s),
		Limits: sandbox.Limits{
			WallTime:   time.Duration(p.Limits.WallTime),
			Pids:       p.Limits.Pids,
			Memory:     int64(p.Limits.Memory),
			CPU:        p.Limits.CPU,
			FileSize:   int64(p.Limits.FileSize),
			OpenFiles:  p.Limits.OpenFiles,
			InboxBytes: int64(p.Limits.InboxBytes),
		},
	}
	return &Resolved{Session: s, Spec: spec, FSDenialsWhy: fsWhy}, nil
}

// receiptMode is the session's read receipts (vault.receipts): on unless
// the profile says otherwise, off without a vault to read.
func receiptMode(s *resolve.Session) sandbox.ReceiptMode {
	switch {
	case s.Placeholder || s.Profile.Vault.Receipts == profiles.ReceiptsOff:
		return sandbox.ReceiptsOff
	case s.Profile.Vault.Receipts == profiles.ReceiptsRequired:
		return sandbox.ReceiptsRequired
	}
	return sandbox.ReceiptsOn
}

// Explain prints what Run would build: the plan, the backend (who enforces
// what, what is missing here) and the sandbox's layers.
func Explain(w io.Writer, r *Resolved, backend sandbox.Backend, asJSON bool) error {
	layers := append(sandbox.DescribeBackend(backend), sandbox.DescribeLayers(r.Plan)...)
	layers = append(layers, explainInbox(r), explainFSDenials(r), explainReceipts(r))
	if l := explainCredentials(r); l != "" {
		layers = append(layers, l)
	}
	return resolve.Explain(w, r.Session, resolve.ExplainOptions{JSON: asJSON, Layers: layers, Width: resolve.OutputWidth(w)})
}

// explainReceipts says whether the agent's vault reads would be recorded
// (vault.receipts, and what this caller can do).
func explainReceipts(r *Resolved) string {
	switch {
	case r.Spec.Receipts == sandbox.ReceiptsOff:
		return "read receipts: off (vault.receipts: off, or no vault): which vault files the agent opens is not recorded"
	case os.Geteuid() == 0:
		return "read receipts: on — before the agent starts, fedmem-run puts a fanotify mount mark on the sandbox's vault mounts; every vault file the agent opens is in the report's vault_reads, and only the sandbox's opens (attribution: sandbox; docs/threat-model.md, \"Read receipts\")"
	}
	return "read receipts: on (an unprivileged caller) — before the agent starts, fedmem-run puts a fanotify inode mark on every folder the sandbox's vault mounts show; every vault file the agent opens is in the report's vault_reads, and so is any other process's open of a vault file while the session runs (attribution: any-process: a host read is a maybe read of the session; docs/threat-model.md, \"Read receipts\"). A vault with more folders than fs.fanotify.max_user_marks allows is not recorded (refused under vault.receipts: required)"
}

// explainFSDenials says whether refused filesystem writes would be
// reported, and what decided it.
func explainFSDenials(r *Resolved) string {
	if r.Spec.FSDenials {
		return "filesystem denials: refused filesystem writes reported (" + r.FSDenialsWhy + "; each write call makes a round trip to pid 1; --fs-denials=false turns it off)"
	}
	return "filesystem denials: " + sandbox.FSDenialsOffNote + " (" + r.FSDenialsWhy + ")"
}

// explainInbox runs the check a launch runs first (checkInboxReachable:
// the inbox's owner, group and mode against the agent's uid and gid) and
// the other inbox checks (inboxFindings), and says whether a run would be
// refused and what to fix.
func explainInbox(r *Resolved) string {
	if r.Placeholder {
		return "inbox check: skipped (no vault)"
	}
	var lines []string
	fs := inboxFindings(r.Vault, r.GID)
	if len(fs) == 0 || fs[0].Rule != "inbox-directory" {
		if err := checkInboxReachable(r.Vault, r.UID, r.GID); err != nil {
			lines = append(lines, "inbox check: a run would be REFUSED [inbox-reachable]: "+err.Error())
		}
	}
	for _, f := range fs {
		lines = append(lines, "inbox check: "+f.String())
	}
	if len(lines) == 0 {
		return fmt.Sprintf("inbox check: ok (uid %d, gid %d can reach %s)", r.UID, r.GID, filepath.Join(r.Vault, vault.InboxDir))
	}
	return strings.Join(lines, "\n")
}

// policy is the network policy of a proxied profile.
func policy(p *profiles.Profile) (*netproxy.Policy, error) {
	self, err := netproxy.HostAddrs()
	if err != nil {
		return nil, err
	}
	pol := &netproxy.Policy{Mode: netproxy.Public, Self: self}
	if p.Network == profiles.NetworkAllowlist {
		pol.Mode = netproxy.Allowlist
		allow, err := p.AllowList() // the egress preset's, then the profile's own
		if err != nil {
			return nil, fmt.Errorf("profile %s: %w", p.Name, err)
		}
		for _, a := range allow {
			r, err := proxyRule(a)
			if err != nil {
				return nil, fmt.Errorf("profile %s: %w", p.Name, err)
			}
			pol.Rules = append(pol.Rules, r)
		}
	}
	return pol, nil
}

// Run runs one session and returns fedmem-run's exit code: the agent's, or
// 124/125/126/127/128+n (sandbox.Exit*). A non-nil error is a fedmem
// failure, already reflected in the code.
func Run(ctx context.Context, o *Options) (int, error) {
	stderr := o.Stderr
	if stderr == nil {
		stderr = io.Discard
	}
	r, err := Resolve(o)
	sandbox.Stamp("resolved")
	if err != nil {
		if !o.Explain {
			reportEarly(o, sandbox.ExitFedmemError, StageOf(err, StageResolve), err, stderr)
		}
		return sandbox.ExitFedmemError, err
	}
	if o.Explain {
		out := o.Stdout
		if out == nil {
			out = io.Discard
		}
		backend, err := backendFor(o, r.Profile)
		if err != nil {
			return sandbox.ExitFedmemError, err
		}
		if err := Explain(out, r, backend, o.ExplainJSON); err != nil {
			return sandbox.ExitFedmemError, err
		}
		return 0, nil
	}
	// The backend before the session exists: one that refuses this
	// caller (the container backends need root) leaves nothing behind.
	backend, err := backendFor(o, r.Profile)
	if err != nil {
		return sandbox.ExitFedmemError, staged(StageBackend, err)
	}
	o2 := *o
	o2.Backend, o = backend, &o2
	if err := sandbox.CheckCaller(o.Backend); err != nil {
		return sandbox.ExitFedmemError, staged(StageBackend, err)
	}
	if err := sandbox.CheckPlan(o.Backend, r.Plan); err != nil {
		return sandbox.ExitFedmemError, staged(StageBackend, err)
	}
	rep := &Report{SchemaVersion: ReportSchemaVersion,
		SessionRecord: vault.SessionRecord{Session: r.ID, Profile: r.Profile.Name, ProfileHash: r.ProfileHash, UID: r.UID, Command: o.Argv},
		Vault:         r.Vault, Inbox: r.Plan.Inbox, Workdir: r.Workdir, Network: r.Profile.Network, Warnings: r.Warnings,
	}
	rep.Started = time.Now().UTC().Format(time.RFC3339Nano)
	// In the record too (review show names what the agent could read).
	rep.VaultHeadStart, _ = vault.ReadHead(r.Vault)
	// The session record before anything else, while a setgid launcher
	// still holds its group: in a launcher install only that group may
	// create records in 90-inbox/.sessions/, which is how the gate knows a
	// record is fedmem-run's (docs/gate.md, "Trust model"). Then the group
	// is dropped (real, effective and saved gid), before any output file,
	// folder or process is made. After the drop the record cannot be
	// rewritten: the end of the session goes to the report only.
	writeSessionRecord(r.Vault, rep, stderr)
	dropped, err := vault.DropLauncherGroup()
	if err != nil {
		reportEarly(o, sandbox.ExitFedmemError, StageLaunch, err, stderr)
		return sandbox.ExitFedmemError, err
	}
	if _, ok := o.Backend.(sandbox.Namespace); ok {
		// A root caller's idmap user namespace is made while the rest of
		// the session is prepared (sandbox.PrepareIdmap; issue 9): as
		// early as this, once the launcher's group is dropped (no process
		// before that). A launch refused later leaves nothing behind: the
		// namespace's child is killed at once, and only a descriptor of
		// this process holds it.
		sandbox.PrepareIdmap(r.OwnerUID, r.UID, r.OwnerGID, r.GID)
	}
	// Output files first: before anything the agent runs, and before this
	// session creates anything.
	var reportF *reportOut
	if o.Report != "" {
		if reportF, err = openReport(o.Report, r.Plan.Writable); err != nil {
			return sandbox.ExitFedmemError, err
		}
		defer reportF.Close()
	}
	ev := &events{session: r.ID}
	if o.Events != "" {
		ev.f, err = openOutput("--events", o.Events, true, r.Plan.Writable)
		err = staged(StageOutput, err)
	}
	defer ev.close()
	code := 0
	if err == nil {
		// From here until the report is written, a forwarded signal
		// (Ctrl-C, SIGTERM) goes to the agent, and one arriving after the
		// agent ended is ignored: it cannot end fedmem-run by the default
		// action before the report below is in place.
		sigs, stopSigs := sandbox.HoldSignals()
		if !o.HoldSignalsToExit {
			defer stopSigs()
		}
		code, err = run(ctx, o, r, ev, rep, stderr, !dropped, sigs)
	}
	if err != nil && code == 0 {
		code = sandbox.ExitCodeOf(err)
	}
	if err != nil && rep.Error == nil {
		// Refused before the agent ran: the report says why.
		rep.ExitCode = code
		rep.Error = &sandbox.Error{Code: code, Stage: StageOf(err, StageLaunch), Msg: err.Error()}
	}
	if reportF != nil {
		b, merr := json.MarshalIndent(rep, "", "  ")
		if merr == nil {
			merr = reportF.commit(append(b, '\n'))
		}
		if errors.Is(merr, ErrReportPath) {
			// The path does not hold fedmem-run's report: a distinct
			// failure (125), whatever the agent's exit code; the
			// caller prints it.
			return sandbox.ExitFedmemError, fmt.Errorf("report: %w", merr)
		}
		if merr != nil {
			fmt.Fprintf(stderr, "fedmem-run: report: %v\n", merr)
		}
	}
	return code, err
}

// reportEarly writes the report of a run refused before its report file
// was open (WriteEarlyReport); a failure to write it is said on stderr.
func reportEarly(o *Options, code int, stage mounts.Stage, cause error, stderr io.Writer) {
	if err := WriteEarlyReport(o, code, stage, cause); err != nil {
		fmt.Fprintf(stderr, "fedmem-run: report not written: %v\n", err)
	}
}

// run does the session's work after Run has opened the output files; rep
// is filled in as it goes.
func run(ctx context.Context, o *Options, r *Resolved, ev *events, rep *Report, stderr io.Writer, rewriteRecord bool, sigs <-chan os.Signal) (int, error) {
	r, err := planWithGateState(o, r)
	if err != nil {
		return sandbox.ExitFedmemError, err
	}
	ss := &session{o: o, r: r, ev: ev, rep: rep, stderr: stderr, environ: o.Environ, nt: &notices{}}
	if ss.environ == nil {
		ss.environ = os.Environ()
	}
	s, spec, prof := r.Session, r.Spec, r.Profile
	// Guarantee 8: every credential's source is read before anything
	// else of the session exists; one that cannot be refuses it (125).
	writable := s.Plan.HostWritable()
	// Links resolved once for both PATH filters, on the view the plan was
	// judged on (nothing since changed a link: the session record and
	// the output files are files, the state folders and the inbox are
	// made below). A credential command may change the host: the PATH
	// filter after it looks again.
	roots := mounts.ResolveRootsIn(s.Links, writable)
	secrets, err := readCredentialsIn(prof, ss.environ, s.Home, writable, roots)
	if err != nil {
		return sandbox.ExitFedmemError, err
	}
	s.Plan.Watch = append(s.Plan.Watch, absentCredentialFiles(prof, s.Home, s.Plan)...)
	pathView := s.Links
	if len(prof.Credentials) > 0 {
		pathView = nil
	}
	if ss.pathDropped = useHostPATH(roots, pathView); len(ss.pathDropped) > 0 {
		ev.emit("host-path", map[string]any{"dropped": ss.pathDropped, "why": "folders the agent may write: fedmem-run runs none of its own programs (git, cp, newgidmap, busctl, fedmem-cred) from them"})
	}
	// From here until the agent has exited, fedmem-run writes nothing to
	// the user's terminal: its messages wait in nt (notices.go).
	defer func() { ss.nt.flush(stderr, s.ID, 0, nil) }() // a run refused before its agent: its warnings still said once
	ss.queueWarnings()
	if err := ss.prepareHostPaths(); err != nil {
		return sandbox.ExitFedmemError, err
	}
	started := time.Now()
	rep.VaultHeadStart, _ = vault.ReadHead(s.Vault)
	if err := ss.makeInbox(); err != nil {
		return sandbox.ExitFedmemError, err
	}
	defer spec.InboxDir.Close()
	defer ss.dropUnstarted() // the refusals returned below
	std, err := ss.attachStdio()
	if err != nil {
		return sandbox.ExitFedmemError, err
	}
	defer std.release()
	spec.Event = ss.onEvent
	spec.Signals = sigs
	defer ss.stopNetwork() // on an early return; the end closes the control first
	if ctx, err = ss.startNetwork(ctx, secrets); err != nil {
		return sandbox.ExitFedmemError, err
	}
	ev.emit("start", map[string]any{"profile": prof.Name, "profile_hash": s.ProfileHash, "vault": s.Vault, "inbox": s.Plan.Inbox,
		"workdir": s.Workdir, "command": o.Argv, "uid": s.UID, "network": prof.Network, "warnings": s.Warnings})
	sandbox.Stamp("prepared")
	res, runErr := o.Backend.Run(ctx, spec) // chosen by Run
	// The agent is gone: its output relays drain now, before fedmem-run
	// writes its own lines to the same stderr (a relay still copying the
	// agent's last bytes into a shared buffer raced the summary: the
	// notices went missing, TestReportCountsDenials once in ~100 runs).
	std.release()
	rep.DurationMS = time.Since(started).Milliseconds()
	code := ss.collect(res, runErr)
	ss.afterSession(res, runErr, rewriteRecord)
	return code, runErr
}

// backendFor is the backend a run uses: the caller's, else the profile's
// backend: (namespace unless it names runc or containerd).
func backendFor(o *Options, prof *profiles.Profile) (sandbox.Backend, error) {
	if o.Backend != nil {
		return o.Backend, nil
	}
	return sandbox.NewBackend(prof.Backend, sandbox.BackendOptions{})
}
