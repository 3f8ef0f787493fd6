package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/sandbox/cgroups"
)

// Namespace is the rootless backend: Linux namespaces through x/sys/unix.
type Namespace struct{}

// Name implements Backend.
func (Namespace) Name() string { return "namespace" }

// Run implements Backend. It re-executes the current binary as the
// sandbox's pid 1 in new namespaces, sends it the config, relays the
// terminal or signals, and returns the agent's exit status.
func (Namespace) Run(ctx context.Context, spec *Spec) (*Result, error) {
	s := *spec // planIdentity may settle UID/GID: never the caller's copy
	spec = &s
	// The init is moved into v1 session cgroups once it exists (Add): the
	// kernel's wait before that move is started now, while the identity,
	// the idmapped binds, the cgroups and the clone are made.
	warm := cgroups.System().WarmAttach(sessionLimits(spec.Limits))
	releaseInbox, err := holdInbox(spec)
	defer releaseInbox()
	if err != nil {
		return nil, err
	}
	idp, err := planIdentity(spec)
	if err != nil {
		return nil, err
	}
	cfg := InitConfig{
		Plan: spec.Plan, Argv: spec.Argv, Env: spec.Env, Dir: spec.Dir, TTY: spec.TTY,
		Hostname: spec.Hostname, RequireLandlock: spec.RequireLandlock, RequireSeccomp: spec.RequireSeccomp,
		FSDenials: spec.FSDenials,
	}
	if err := setInboxIdentity(spec, &cfg); err != nil {
		return nil, err
	}
	link, err := newInitLink(spec, &cfg)
	if err != nil {
		return nil, err
	}
	defer link.Close()
	cmd := namespaceInit(spec, idp, link, &cfg)
	link.setStdio(cmd, spec)
	clean := startNamespaceCleanup(spec)
	defer clean.run()
	if idp.cred != nil {
		clean.closeIdmapped, err = idmapBinds(spec, &cfg, &idp.id, cmd)
		if err != nil {
			return nil, err
		}
	}
	Stamp("idmapped")
	cg, limitNotes, err := limitsSetup(spec, &cfg)
	clean.cg = cg
	Stamp("limits")
	if err != nil {
		return nil, err
	}
	if fd := cg.FD(); fd != nil {
		// clone3(CLONE_INTO_CGROUP): the init is born in the session's
		// v2 cgroup and never runs a single instruction outside its limits.
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, int(fd.Fd())
	}

	// Forward termination signals to pid 1, which forwards them to the agent.
	sigs, stopSigs := forwarded(spec)
	defer stopSigs()
	cloned, err := startNamespaceInit(cmd, &cfg, link, idp, cg, clean, warm)
	if err != nil {
		return nil, err
	}
	var tmpFull tmpCap // /tmp or /dev/shm full: limits.tmp_bytes
	// The session's cgroup first (every process of it gets its SIGKILL
	// from here: the inbox flood's writers stop at once, not once the
	// dying pid 1 got a CPU to reach exit), then pid 1, which ends the
	// whole pid namespace (no v2 cgroup: that alone).
	pl := startParentLimits(spec, func() { cg.Kill(); _ = cmd.Process.Kill() })
	defer pl.stop()
	msgs, masters := link.started(spec)
	proposal := link.proposal()
	rec := link.recorder(spec)
	for _, f := range cmd.ExtraFiles[len(link.files):] {
		f.Close() // the idmapped trees: the init holds them now
	}
	host := hostLayers{backend: "namespace", namespaces: sandboxNamespaces(spec.Plan), pty: link.relay != nil,
		limits: limitNotes, identity: &idp.id, enforced: Namespace{}.Describe()}
	res := host.newResult()
	w := &watch{spec: spec, res: res, host: host, relay: link.relay, proc: cmd.Process,
		kill: func() { _ = cmd.Process.Signal(unix.SIGKILL) }, masters: masters, sigs: sigs,
		started: func(m InitMessage) map[string]any {
			tmpFull.start(spec.Plan, cmd.Process.Pid, func() { _ = cmd.Process.Kill() })
			return map[string]any{"phases_ms": startPhases(cloned, m.Phases)}
		}}
	runErr := w.run(ctx, msgs)
	werr := w.reap(cmd)
	// The init is gone: the proposal's upper tmpfs (if it mounted one)
	// is held by this descriptor alone now.
	res.Proposal = <-proposal
	res.VaultReads = rec.Finish()
	Stamp("reaped")
	clean.coversLost = res.CoversLost != ""
	if cg != nil {
		res.LimitsHit = append(res.LimitsHit, cg.Hits()...)
	}
	clean.run()
	Stamp("cleaned")
	if g := clean.placeholders(); g.err != nil {
		return nil, g.err // the init got no config: nothing ran
	}
	return conclude(spec, res, pl, &tmpFull, runErr, func(res *Result) error {
		// The init died without saying why (killed from outside, or OOM).
		var ee *exec.ExitError
		if errors.As(werr, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				res.Signal = int(ws.Signal())
				res.ExitCode = 128 + res.Signal
				return nil
			}
		}
		return &Error{Code: ExitFedmemError, Stage: mounts.StageInit, Msg: fmt.Sprintf("sandbox init ended without a status: %v", werr)}
	})
}

// namespaceInit is the command of the sandbox's pid 1: this executable
// again, under InitArg0, cloned into the sandbox's namespaces with the
// identity idp maps, holding across its execve the capabilities it needs
// to build the root; cfg learns what the identity asks of the init.
func namespaceInit(spec *Spec, idp *idPlan, link *initLink, cfg *InitConfig) *exec.Cmd {
	flags := uintptr(unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID |
		unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP)
	if spec.Plan.Network.OwnNetNS() { // every mode but host: fail closed
		flags |= unix.CLONE_NEWNET
	}
	cmd := &exec.Cmd{
		Path:       "/proc/self/exe",
		Args:       []string{InitArg0},
		Env:        initEnv(),
		ExtraFiles: slices.Clone(link.files),
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags:                 flags,
			UidMappings:                idp.uidMaps,
			GidMappings:                idp.gidMaps,
			GidMappingsEnableSetgroups: idp.enableSetgroups,
			Pdeathsig:                  unix.SIGKILL,
			// The init keeps its uid (paths and owners agree inside and
			// out), so execve would clear the namespace's capabilities
			// for a non-root uid; ambient capabilities carry the few it
			// needs to build the root across that execve. It drops them
			// all before the agent starts.
			AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP, unix.CAP_NET_ADMIN},
		},
	}
	if spec.Plan.ProposedWorkdir() != nil {
		// overlayfs does its work (copy-up, whiteouts, its work
		// directory of mode 0) with the credentials of whoever mounted
		// it, kept at mount time: an unprivileged caller's init (not
		// uid 0 inside) needs these capabilities of the sandbox's user
		// namespace for a proposed workdir (mountProposal). Dropped
		// with the others before the agent starts; only the overlay's
		// saved credentials keep them, for its own operations.
		cmd.SysProcAttr.AmbientCaps = append(cmd.SysProcAttr.AmbientCaps, unix.CAP_DAC_OVERRIDE, unix.CAP_FOWNER, unix.CAP_CHOWN)
	}
	if idp.newgidmap != "" {
		// The gid map comes from newgidmap once the init exists; the init
		// needs CAP_SETGID to drop the caller's groups (setgroups([])).
		cmd.SysProcAttr.AmbientCaps = append(cmd.SysProcAttr.AmbientCaps, unix.CAP_SETGID)
		cfg.DropGroups = true
	}
	if idp.cred != nil {
		// A root caller: the init is uid 0 of its namespace (host 0, no
		// group) and its forker makes the agent spec.UID:GID at fork.
		cmd.SysProcAttr.Credential = idp.cred
		cfg.AgentSwitch, cfg.AgentUID, cfg.AgentGID, cfg.AgentGroups = true, spec.UID, spec.GID, idp.agentGroups
	}
	return cmd
}

// placeholderGuard is guardPlaceholders' outcome.
type placeholderGuard struct {
	release func(coversLost bool)
	err     error
}

// namespaceCleanup is the namespace session's cleanup, once the sandbox is
// gone (or never started): the session cgroup's removal (an rmdir of a v1
// memory cgroup can take milliseconds) runs beside the placeholders'
// removal and the idmapped trees' close, and all are done before Run
// returns — nothing is left running or behind.
type namespaceCleanup struct {
	// placeholders waits for the placeholders' guard (made while the
	// init starts) and returns it.
	placeholders  func() placeholderGuard
	cg            *cgroups.Session
	closeIdmapped func()
	coversLost    bool // the init found a cover detached at the end (reverify)
	once          sync.Once
}

// startNamespaceCleanup starts guarding the placeholders (guarantee 6:
// placeholders leave no litter). They are made while the init starts (the
// config, hence the root build, waits for them), off the start-up's
// critical path (issue 9); every return waits for them and releases them.
func startNamespaceCleanup(spec *Spec) *namespaceCleanup {
	guarded := make(chan placeholderGuard, 1)
	go func() {
		release, err := guardPlaceholders(spec)
		guarded <- placeholderGuard{release, err}
	}()
	return &namespaceCleanup{
		placeholders:  sync.OnceValue(func() placeholderGuard { return <-guarded }),
		closeIdmapped: func() {},
	}
}

// run cleans up, once.
func (c *namespaceCleanup) run() {
	c.once.Do(func() {
		removed := make(chan struct{})
		go func() {
			defer close(removed)
			c.cg.Remove()
		}()
		c.closeIdmapped()
		c.placeholders().release(c.coversLost)
		<-removed
	})
}

// startNamespaceInit starts the init and hands it its config once it may
// read it: with newgidmap, after its gid map is written (no step of the
// sandbox runs with the caller's groups still usable); with a v1 session
// cgroup, once it is in it (v2 is entered at clone); and only once the
// placeholders are guarded. It returns when the init was cloned; on an
// error the init gets no config and is killed and reaped.
func startNamespaceInit(cmd *exec.Cmd, cfg *InitConfig, link *initLink, idp *idPlan, cg *cgroups.Session, clean *namespaceCleanup, warm *cgroups.Warm) (cloned int64, err error) {
	// The config goes into the pipe while the init is still starting (a
	// config larger than the pipe buffer just completes once it reads).
	// Should the init die first, the write fails with EPIPE and the init's
	// own error, or its exit status, tells why.
	placed := make(chan bool, 1) // sent once, and only with a v1 cgroup
	mapped := make(chan bool, 1) // sent once, and only with newgidmap
	link.sendConfig(cfg, func() bool {
		ok := !cg.NeedsAdd() || <-placed
		if ok && idp.newgidmap != "" {
			ok = <-mapped
		}
		// The placeholders are made (and their directories locked)
		// before the init builds the root; if they cannot be guarded the
		// init gets no config and the session is refused below.
		return ok && clean.placeholders().err == nil
	})
	if cg.NeedsAdd() {
		warm.Again()
	}
	cloned = MonoNow()
	if err := cmd.Start(); err != nil {
		if cg.NeedsAdd() {
			placed <- false
		}
		mapped <- false
		return 0, &Error{Code: ExitFedmemError, Stage: mounts.StageStart, Msg: startHint(err)}
	}
	if idp.newgidmap != "" {
		// Before the init reads its config (it waits for it).
		if err := idp.mapGids(cmd.Process.Pid); err != nil {
			mapped <- false
			if cg.NeedsAdd() {
				placed <- false
			}
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return 0, err
		}
		mapped <- true
	}
	if cg.NeedsAdd() {
		if err := cg.Add(cmd.Process.Pid); err != nil {
			placed <- false
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return 0, &Error{Code: ExitFedmemError, Stage: mounts.StageLimits, Msg: err.Error()}
		}
		placed <- true
	}
	// The config's sender was woken onto this thread's run queue: let it
	// write now, not after this goroutine's next stretch of work (the
	// report's layers, the receipts recorder), which kept the init
	// waiting for its config ~2 ms more.
	runtime.Gosched()
	return cloned, nil
}

func emit(spec *Spec, name string, fields map[string]any) {
	if spec.Event != nil {
		spec.Event(name, fields)
	}
}

// serveProxy takes the connections the sandbox hands over and lets the
// allowlist proxy serve each. It ends when the sandbox is gone.
func serveProxy(ctl *os.File, spec *Spec) {
	for {
		f := recvFd(ctl)
		if f == nil {
			return
		}
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			continue
		}
		go spec.Proxy.Serve(c)
	}
}

// recvFd receives one file descriptor over a unix socket; nil if the peer
// closed it without sending one (the init failed before making the pty).
func recvFd(sock *os.File) *os.File {
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(4))
	n, oobn, _, _, err := unix.Recvmsg(int(sock.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil || n == 0 {
		return nil
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return nil
	}
	return os.NewFile(uintptr(fds[0]), "pty-master")
}

// initEnv is the environment of the sandbox's pid 1 (the agent's comes in
// the config, never from here). One P is plenty for a process that mostly
// waits, and fewer runtime threads make start-up and every all-threads
// credential change cheaper.
func initEnv() []string { return []string{"GOMAXPROCS=1"} }

// sessionLimits are the limits a session cgroup is asked for first.
// Share: every session's processes go in a cpu cgroup under the one
// fedmem.slice, whatever the profile, so that sessions together weigh as
// one CPU entity against the gate and the rest of the host.
func sessionLimits(l Limits) cgroups.Limits {
	return cgroups.Limits{Memory: l.Memory, Pids: l.Pids, CPU: l.CPU, Share: true}
}

// limitsSetup decides how each limit of the spec is enforced: a session
// cgroup (v2 or v1, package cgroups) for pids, memory and cpu where one can
// be made, else rlimits the init
// sets before forking the agent (pids), else a refusal — never a silently
// weaker sandbox.
func limitsSetup(spec *Spec, cfg *InitConfig) (*cgroups.Session, []string, error) {
	l := spec.Limits
	notes := parentLimitNotes(l, "sandbox")
	notes = append(notes, fileRlimits(l, cfg)...)
	notes = append(notes, tmpNotes(spec.Plan)...)
	want := sessionLimits(l) // Share: see sessionLimits
	host := cgroups.System()
	// Each controller that cannot be set up is refused, or left out (and
	// said so) where the profile's cgroup_optional covers it, or for pids
	// replaced by RLIMIT_NPROC; then the rest is tried again.
	for {
		cg, err := host.New(spec.Plan.Session, want)
		if err == nil {
			if cg != nil {
				notes = append(notes, cg.Notes()...)
			}
			return cg, notes, nil
		}
		ctrl := "memory"
		var ce *cgroups.ControllerError
		if errors.As(err, &ce) {
			ctrl = ce.Controller
		}
		optional := slices.Contains(spec.Plan.CgroupOptional, ctrl)
		switch ctrl {
		case "memory":
			if !optional {
				return nil, nil, &Error{Code: ExitFedmemError, Stage: mounts.StageLimits, Msg: "limits.memory needs a cgroup fedmem-run can create, and: " + err.Error() + " (run as root, drop limits.memory, or accept it with limits.cgroup_optional)"}
			}
			notes = append(notes, fmt.Sprintf("memory=%d NOT ENFORCED: no session cgroup (%v); the profile's limits.cgroup_optional allows it", l.Memory, err))
			want.Memory = 0
		case "cpu":
			if want.CPU == 0 { // only the shared weight: said, never fatal
				notes = append(notes, fmt.Sprintf("cpu: sessions NOT pooled under %s (%v): this session's processes compete for CPU on their own", cgroups.Slice, err))
				want.Share = false
				continue
			}
			want.Share = false
			if !optional {
				return nil, nil, &Error{Code: ExitFedmemError, Stage: mounts.StageLimits, Msg: "limits.cpu needs a cgroup fedmem-run can create, and: " + err.Error() + " (run as root, drop limits.cpu, or accept it with limits.cgroup_optional)"}
			}
			notes = append(notes, fmt.Sprintf("cpu=%g NOT ENFORCED: no session cgroup (%v); the profile's limits.cgroup_optional allows it", l.CPU, err))
			want.CPU = 0
		default: // pids
			want.Pids = 0
			if spec.UID == 0 {
				// The kernel exempts uid 0 of the initial user namespace from
				// RLIMIT_NPROC, and the sandbox's uid 0 maps to it.
				if !optional {
					return nil, nil, &Error{Code: ExitFedmemError, Stage: mounts.StageLimits, Msg: "limits.pids for an agent running as uid 0 needs a cgroup, and: " + err.Error()}
				}
				notes = append(notes, fmt.Sprintf("pids=%d NOT ENFORCED: an agent running as uid 0 needs a cgroup, and: %v; the profile's limits.cgroup_optional allows it", l.Pids, err))
				break
			}
			cfg.Rlimits = append(cfg.Rlimits, Rlimit{Resource: unix.RLIMIT_NPROC, Max: uint64(l.Pids)})
			notes = append(notes, fmt.Sprintf("pids=%d (RLIMIT_NPROC in the sandbox's user namespace; no cgroup: %v)", l.Pids, err))
		}
	}
}

func startHint(err error) string {
	msg := fmt.Sprintf("cannot create the sandbox namespaces: %v", err)
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENOSPC) {
		msg += " (unprivileged user namespaces may be disabled: check `sysctl kernel.unprivileged_userns_clone user.max_user_namespaces` and, on Ubuntu, kernel.apparmor_restrict_unprivileged_userns; `fedmem doctor` explains)"
	}
	return msg
}
