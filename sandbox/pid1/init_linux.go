package pid1

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/sandbox"
)

// InitMain is the sandbox's pid 1. fedmem-run's main calls it, before
// parsing any flag, when os.Args[0] == InitArg0. It never returns.
//
// It runs inside the new namespaces with the user namespace's full
// capabilities, builds and verifies the root, applies the layers to every
// thread of itself, then forks the agent — which inherits all of them — and
// reaps until the agent exits.
func InitMain() {
	if len(os.Args) > 1 && os.Args[1] == sandbox.UsernsHoldArg {
		holdMain()
	}
	// The agent is forked from this thread, which alone gets the empty
	// bounding set (see dropCapabilities): stay on it.
	runtime.LockOSThread()
	in := &initRun{
		phases: map[string]int64{"go": sandbox.ProcessStart, "init": sandbox.MonoNow()},
		sync:   os.NewFile(sandbox.InitSyncFd, "sync"),
		layers: sandbox.Layers{Caps: "none"},
	}
	in.readConfig()
	// The forker thread is started now so that its creation and its
	// bounding-set drop overlap with building the root instead of adding
	// to the start-up time.
	in.fk = startForker(&in.cfg)
	// Not dumpable: the agent (same uid) cannot open /proc/1/mem, /proc/1/exe
	// or /proc/1/fd of this process (CVE-2019-5736 went through /proc/self/exe
	// of the runtime).
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		in.fail(sandbox.ExitFedmemError, mounts.StagePrctl, err)
	}
	in.buildAndVerifyRoot()
	in.handOverVault() // read receipts: fedmem-run marks the vault's mounts
	in.setUpNetwork()
	in.restrict()
	path := in.agentPath()
	// The agent is forked from a dedicated thread (the main thread stays
	// locked to this goroutine, so the forker runs elsewhere). That thread
	// alone drops its bounding set (the agent inherits it) and enters a
	// nested Landlock domain that scopes signals and abstract sockets, so
	// the agent cannot signal this pid 1, whose leader thread stays outside.
	in.fk.path <- path
	if err := <-in.fk.ready; err != nil {
		in.fail(sandbox.ExitFedmemError, mounts.StageCapabilities, err)
	}
	in.setRlimits()
	in.dropCapabilities()
	sigs := in.holdSignals()
	pid := in.forkAgent()
	in.reap(pid, sigs)
}

// initRun is the state of the sandbox's pid 1 as InitMain goes through its
// steps; every step that fails ends the process through fail.
type initRun struct {
	sync   *os.File // the sync pipe: the parent reads our messages there
	cfg    sandbox.InitConfig
	layers sandbox.Layers
	phases map[string]int64
	fk     *forker
	// table is the mount table verifyLive read and checked, which
	// handOverVault hands the vault's mount points from (nothing mounts
	// between the two: the pty is a descriptor, not a mount).
	table []*mountinfo.Info
}

// fail reports err at stage to the parent and exits with code.
func (in *initRun) fail(code int, stage mounts.Stage, err error) {
	in.send(sandbox.InitMessage{Type: sandbox.MsgError, Err: &sandbox.Error{Code: code, Stage: stage, Msg: err.Error()}})
	os.Exit(code)
}

// send writes one message to the parent.
func (in *initRun) send(m sandbox.InitMessage) {
	_ = json.NewEncoder(in.sync).Encode(m)
}

// readConfig reads the config the parent sends (bounded) and drops the
// caller's supplementary groups when it asks.
func (in *initRun) readConfig() {
	cfgFile := os.NewFile(sandbox.InitConfigFd, "config")
	if err := json.NewDecoder(io.LimitReader(cfgFile, 16<<20)).Decode(&in.cfg); err != nil {
		in.fail(sandbox.ExitFedmemError, mounts.StageConfig, err)
	}
	cfgFile.Close()
	in.phases["config"] = sandbox.MonoNow()
	if in.cfg.DropGroups {
		// Process-wide (Go applies it to every thread).
		if err := syscall.Setgroups(nil); err != nil {
			in.fail(sandbox.ExitFedmemError, mounts.StageIdentity, fmt.Errorf("setgroups([]): %w", err))
		}
		if gs, err := unix.Getgroups(); err != nil || len(gs) != 0 {
			in.fail(sandbox.ExitFedmemError, mounts.StageIdentity, fmt.Errorf("supplementary groups still held after setgroups([]): %v %v", gs, err))
		}
	}
	if in.cfg.Plan == nil || len(in.cfg.Argv) == 0 {
		in.fail(sandbox.ExitFedmemError, mounts.StageConfig, errors.New("empty plan or command"))
	}
}

// buildAndVerifyRoot builds the root (or checks the container runtime's),
// drops from the plan the masks this uid cannot reach (said in the
// layers' notes), verifies the live mount table against the plan and,
// with a terminal, makes the sandbox's private pty.
func (in *initRun) buildAndVerifyRoot() {
	cfg := &in.cfg
	skipped, err := buildRootFor(cfg) // oci_linux.go: or check the container runtime's
	if err != nil {
		in.fail(sandbox.ExitFedmemError, mounts.StageMounts, err)
	}
	in.phases["root"] = sandbox.MonoNow()
	if len(skipped) > 0 {
		kept := cfg.Plan.Mounts[:0]
		for _, m := range cfg.Plan.Mounts {
			if (m.Kind != mounts.Masked && m.Kind != mounts.Protected) || !slices.Contains(skipped, m.Target) {
				kept = append(kept, m)
			}
		}
		cfg.Plan.Mounts = kept
		for _, p := range skipped {
			in.layers.Notes = append(in.layers.Notes, "not masked (unreachable by the agent's uid): "+p)
		}
	}
	table, err := verifyLive(cfg.Plan)
	if err != nil {
		in.fail(sandbox.ExitFedmemError, mounts.StageVerify, err)
	}
	if err := verifyInbox(cfg); err != nil {
		in.fail(sandbox.ExitFedmemError, mounts.StageVerify, err)
	}
	in.table = table
	if cfg.TTY {
		if err := makeSandboxPTY(cfg); err != nil {
			in.fail(sandbox.ExitFedmemError, mounts.StagePTY, err)
		}
	}
	in.layers.Verified = true
	in.phases["verify"] = sandbox.MonoNow()
}

// setUpNetwork names the host, brings loopback up in the sandbox's own
// network namespace and starts the proxy relay; then no descriptor that
// survived this far may reach the agent.
func (in *initRun) setUpNetwork() {
	cfg := &in.cfg
	if cfg.Hostname != "" {
		_ = unix.Sethostname([]byte(cfg.Hostname))
	}
	if cfg.Plan.Network.OwnNetNS() {
		if err := loopbackUp(); err != nil {
			in.fail(sandbox.ExitFedmemError, mounts.StageNetwork, err)
		}
	}
	if cfg.ProxyFd > 0 {
		if err := startProxyRelay(cfg.ProxyFd, cfg.ProxyPort); err != nil {
			in.fail(sandbox.ExitFedmemError, mounts.StageNetwork, err)
		}
	}
	// Whatever descriptor survived this far must not reach the agent.
	_ = unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	in.phases["network"] = sandbox.MonoNow()
}

// restrict applies the all-threads layers before the fork: no_new_privs
// and the Landlock domain.
func (in *initRun) restrict() {
	if err := setNoNewPrivs(); err != nil {
		in.fail(sandbox.ExitFedmemError, mounts.StageNoNewPrivs, err)
	}
	in.layers.NoNewPrivs = true
	if err := applyLandlock(&in.cfg, &in.layers); err != nil {
		in.fail(sandbox.ExitFedmemError, mounts.StageLandlock, err)
	}
	in.phases["landlock"] = sandbox.MonoNow()
}

// agentPath looks the agent's command up in its PATH, inside the sandbox:
// absent is 127, not executable 126.
func (in *initRun) agentPath() string {
	path, err := lookPath(in.cfg.Argv[0], in.cfg.Env, in.cfg.Dir)
	if err != nil {
		code := sandbox.ExitNotFound
		if errors.Is(err, unix.EACCES) || errors.Is(err, unix.ENOEXEC) || errors.Is(err, unix.EISDIR) {
			code = sandbox.ExitCannotExecute
		}
		in.fail(code, "exec", err)
	}
	return path
}

// setRlimits sets the limits the config asks the init for (file_size,
// open_files, pids without a cgroup); the agent inherits them.
func (in *initRun) setRlimits() {
	for _, r := range in.cfg.Rlimits {
		lim := unix.Rlimit{Cur: r.Max, Max: r.Max}
		if err := unix.Setrlimit(r.Resource, &lim); err != nil {
			in.fail(sandbox.ExitFedmemError, mounts.StageLimits, fmt.Errorf("setrlimit(%d, %d): %w", r.Resource, r.Max, err))
		}
	}
}

// dropCapabilities drops every capability of every thread but what the
// forker needs to switch to the agent's identity and signal it.
func (in *initRun) dropCapabilities() {
	var keep uint64
	if in.cfg.AgentSwitch {
		// The forker's child becomes the agent's uid between fork and
		// exec; execve of a non-root uid leaves it no capability. The
		// forker thread signals the agent, another uid, for the launcher
		// (forwarded SIGINT, SIGTERM…): without CAP_KILL kill(2) fails
		// with EPERM and the signal is lost (TestRedteam3SigtermReachesAgent).
		// It reaches only this user namespace, the sandbox's.
		keep = 1<<unix.CAP_SETUID | 1<<unix.CAP_SETGID | 1<<unix.CAP_KILL
		if in.cfg.AgentUID == 0 || in.cfg.AgentGID == 0 {
			in.fail(sandbox.ExitFedmemError, mounts.StageIdentity, errors.New("refusing to run the agent as uid or gid 0"))
		}
	}
	if err := dropCapabilities(keep); err != nil {
		in.fail(sandbox.ExitFedmemError, mounts.StageCapabilities, err)
	}
	in.fk.keep = keep
	in.phases["caps"] = sandbox.MonoNow()
}

// holdSignals registers the signals forwarded to the agent and swallows
// every other the Go runtime would act on.
func (in *initRun) holdSignals() <-chan os.Signal {
	// Forward signals from the parent to the agent. Register before the
	// fork so that none is lost, and after the all-threads layers above:
	// os/signal starts two threads of its own, which inherit every layer
	// from the thread that creates them instead of making each all-threads
	// round longer (issue 9). Until here a signal from the launcher ends
	// this pid 1 as it would during the root build.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwardedSignals...)
	// Every other signal the Go runtime would act on is caught and
	// dropped (signals_linux.go): a pid namespace's init gets from inside
	// only the signals it handles, and the runtime's default handling of
	// some (SIGQUIT, SIGABRT, SIGSYS…) is to dump its stacks and die — an
	// agent of the same uid must not end the session's pid 1 that way. The
	// forwarded ones above only ever reach the agent itself. Nothing reads
	// the channel: os/signal never blocks on a full one, it drops the
	// signal, which is all a swallowed signal needs (no goroutine to start
	// on the way to the fork).
	signal.Notify(make(chan os.Signal, 1), swallowedSignals...)
	in.phases["signals"] = sandbox.MonoNow()
	return sigs
}

// forkAgent installs the seccomp filter (the last layer, with its
// reporting), lets the forker fork and exec the agent, and tells the
// parent the session started with these layers; it returns the agent's
// pid.
func (in *initRun) forkAgent() int {
	var err error
	if in.fk.reports, err = applySeccompReporting(&in.cfg, &in.layers, in.sync); err != nil {
		in.fail(sandbox.ExitFedmemError, mounts.StageSeccomp, err)
	}
	in.phases["layers"] = sandbox.MonoNow()
	in.fk.goAhead <- struct{}{}
	res := <-in.fk.done
	in.phases["exec"] = sandbox.MonoNow()
	if res.stage != "" {
		in.fail(sandbox.ExitFedmemError, res.stage, res.err)
	}
	if res.err != nil {
		code := sandbox.ExitCannotExecute
		if errors.Is(res.err, unix.ENOENT) {
			code = sandbox.ExitNotFound
		}
		in.fail(code, "exec", fmt.Errorf("%s: %w", in.cfg.Argv[0], res.err))
	}
	if res.scoped {
		in.layers.Notes = append(in.layers.Notes, "agent in a nested Landlock domain: cannot signal pid 1")
	}
	in.send(sandbox.InitMessage{Type: sandbox.MsgStarted, Layers: &in.layers, Phases: in.phases})
	return res.pid
}

// reap forwards sigs to the agent, pid, and reaps every child until the
// agent ends; then it tells the parent how (and whether the mount table
// still matched the plan) and exits with the agent's status.
func (in *initRun) reap(pid int, sigs <-chan os.Signal) {
	var stopped atomic.Bool
	go func() {
		for s := range sigs {
			sig := s.(syscall.Signal)
			if sig == unix.SIGWINCH {
				continue // the pty delivers it to the foreground group
			}
			// Sent by the forker thread: see forker.signals.
			in.fk.signal(sig)
			if sig != unix.SIGCONT && stopped.Load() {
				// A stopped job acts on nothing until continued (a
				// shell's kill sends SIGCONT after SIGHUP/SIGTERM too).
				in.fk.signal(unix.SIGCONT)
			}
		}
	}()
	for {
		var ws unix.WaitStatus
		wpid, err := unix.Wait4(-1, &ws, unix.WUNTRACED|unix.WCONTINUED, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			in.fail(sandbox.ExitFedmemError, mounts.StageWait, err)
		}
		if wpid != pid {
			continue // an orphan re-parented to us: reaped
		}
		switch {
		case ws.Continued():
			stopped.Store(false)
		case ws.Stopped():
			stopped.Store(true)
			if in.cfg.TTY {
				in.send(sandbox.InitMessage{Type: sandbox.MsgStopped, Signal: int(ws.StopSignal())})
			}
		case ws.Exited():
			in.send(sandbox.InitMessage{Type: sandbox.MsgExit, Code: ws.ExitStatus(), CoversLost: reverify(in.cfg.Plan)})
			os.Exit(ws.ExitStatus())
		case ws.Signaled():
			n := int(ws.Signal())
			in.send(sandbox.InitMessage{Type: sandbox.MsgExit, Code: 128 + n, Signal: n, CoversLost: reverify(in.cfg.Plan)})
			os.Exit(128 + n)
		}
	}
}

type forkResult struct {
	pid    int
	scoped bool
	err    error
	stage  mounts.Stage // set when err is not the fork's or exec's
}

type forker struct {
	ready   chan error
	path    chan string
	goAhead chan struct{}
	done    chan forkResult
	// signals are forwarded to the agent by the forker thread itself. It
	// must be that thread: Landlock gives each thread its own domain when
	// restricting all of them on ABIs without a shared-domain flag, and the
	// agent's nested, signal-scoped domain descends from this thread's
	// only — any other thread of pid 1 gets EPERM.
	signals chan syscall.Signal
	// reports, set before goAhead, is the seccomp listener this thread
	// serves after the fork; wake, set before done, wakes it for signals
	// (-1: it waits on signals alone).
	reports *denialReporter
	wake    int
	// keep, set before goAhead, is what the forking thread may still hold
	// (checkForkerCreds).
	keep uint64
}

// signal has the forker thread send sig to the agent.
func (f *forker) signal(sig syscall.Signal) {
	f.signals <- sig
	if f.wake >= 0 {
		_, _ = unix.Write(f.wake, []byte{0})
	}
}

// startForker starts the goroutine, locked to its own thread, that forks
// the agent once the process-wide layers are in place.
func startForker(cfg *sandbox.InitConfig) *forker {
	f := &forker{ready: make(chan error, 1), path: make(chan string, 1), goAhead: make(chan struct{}), done: make(chan forkResult, 1), signals: make(chan syscall.Signal, 16), wake: -1}
	go func() {
		// Never unlocked: the thread dies with the goroutine, and no other
		// goroutine ever runs with its credentials.
		runtime.LockOSThread()
		f.ready <- dropBoundingSet()
		path := <-f.path
		<-f.goAhead
		var r forkResult
		if r.err = checkForkerCreds(f.keep); r.err != nil {
			r.stage = mounts.StageCapabilities
			f.done <- r
			return
		}
		if r.scoped, r.err = scopeThread(); r.err != nil {
			f.done <- r
			return
		}
		attr := &syscall.ProcAttr{
			Dir:   cfg.Dir,
			Env:   cfg.Env,
			Files: []uintptr{0, 1, 2},
			Sys:   &syscall.SysProcAttr{},
		}
		if cfg.AgentSwitch {
			// setgroups(AgentGroups), setgid, setuid in the child, before exec.
			groups := []uint32{}
			for _, g := range cfg.AgentGroups {
				groups = append(groups, uint32(g))
			}
			attr.Sys.Credential = &syscall.Credential{Uid: uint32(cfg.AgentUID), Gid: uint32(cfg.AgentGID), Groups: groups}
		}
		if cfg.TTY {
			// This init is the session leader of the private pty; the
			// agent gets its own process group in the foreground, so
			// Ctrl-C and Ctrl-Z reach it and job control works.
			attr.Sys.Setpgid = true
			attr.Sys.Foreground = true
			attr.Sys.Ctty = 0
		} else {
			attr.Sys.Setsid = true
		}
		r.pid, r.err = syscall.ForkExec(path, cfg.Argv, attr)
		if r.err == nil && f.reports != nil && f.reports.fd >= 0 {
			f.wake = f.reports.wakeW
		}
		f.done <- r
		if r.err != nil {
			return
		}
		forward := func(sig syscall.Signal) {
			if cfg.TTY && sig == unix.SIGCONT {
				// Resume the whole job. The agent's group stayed the pty's
				// foreground group: no TIOCSPGRP here, which from this
				// background group would raise SIGTTOU that a pid 1 never
				// receives, restarting the ioctl forever.
				_ = unix.Kill(-r.pid, sig)
				return
			}
			_ = unix.Kill(r.pid, sig)
		}
		// This thread serves the seccomp listener (denials_linux.go).
		f.reports.serve(func() {
			for {
				select {
				case sig := <-f.signals:
					forward(sig)
				default:
					return
				}
			}
		})
		for sig := range f.signals {
			forward(sig)
		}
	}()
	return f
}

// verifyLive checks the mount table of the finished root and probes the
// vault with faccessat: both must say the vault is read-only. It returns
// the table it checked.
func verifyLive(pl *mounts.Plan) ([]*mountinfo.Info, error) {
	table, err := readVerifyMountTable(pl)
	if err != nil {
		return nil, err
	}
	for _, p := range []string{pl.Vault, filepath.Join(pl.Vault, ".git")} {
		// EROFS: the mount is read-only. EACCES: file permissions deny
		// this uid before the kernel looks at the mount (the mount table
		// check above already proved the mount read-only).
		err := unix.Faccessat(unix.AT_FDCWD, p, unix.W_OK, unix.AT_EACCESS)
		if (len(pl.Visible) > 0 || pl.View != nil) && errors.Is(err, unix.ENOENT) {
			continue // hidden by vault.visible or vault.view: not there to write
		}
		if !errors.Is(err, unix.EROFS) && !errors.Is(err, unix.EACCES) {
			return nil, &mounts.VerifyError{Path: p, Rule: "vault-readonly", Detail: fmt.Sprintf("write access probe returned %v, want EROFS or EACCES", err)}
		}
	}
	if err := verifyView(pl); err != nil {
		return nil, err
	}
	return table, nil
}

// reverify checks the live mount table against the plan again once the
// agent has ended, and says how it no longer matches ("" when it does).
// The covers of protected names in a writable workdir (placeholders,
// read-only binds) are mount points in this namespace only: a process
// outside it that unlinks or replaces one on the host — a concurrent
// session's agent whose workdir holds this one's, or the user's own tools
// — detaches it here (Linux >= 3.18), and the agent may then have written
// the name. fedmem-run's after-session sweep then checks those names too
// (sweepNestedRepos).
func reverify(pl *mounts.Plan) string {
	if err := verifyMountTable(pl); err != nil {
		return err.Error()
	}
	return ""
}

// verifyMountTable checks this process's mount table against the plan.
func verifyMountTable(pl *mounts.Plan) error {
	_, err := readVerifyMountTable(pl)
	return err
}

// readVerifyMountTable is verifyMountTable returning the table it checked.
func readVerifyMountTable(pl *mounts.Plan) ([]*mountinfo.Info, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return mounts.VerifyRead(pl, f)
}

// lookPath finds the command as a shell started in the agent's working
// directory would, inside the sandbox's root: a name with a slash is that
// path, relative to dir when it does not start with one ("./agent.sh",
// "bin/run"); a bare name is looked up in the PATH of the agent's
// environment, whose relative entries ("", ".", "bin") are relative to dir
// too. This init runs from "/" of the new root, not from dir (the agent
// gets dir only at its fork), so a relative path must never be resolved
// from the init's own directory: `fedmem-run -- ./agent.sh` would look for
// /agent.sh and exit 127. The path is checked as seen from dir and
// returned as written: the fork enters dir before execve, so a script's $0
// is "./agent.sh" as under a shell.
func lookPath(name string, env []string, dir string) (string, error) {
	if dir == "" {
		dir = "/"
	}
	abs := func(p string) string {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	if strings.Contains(name, "/") {
		return name, checkExec(abs(name))
	}
	pathEnv := "/usr/local/bin:/usr/bin:/bin"
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "PATH="); ok {
			pathEnv = v
		}
	}
	var firstErr error
	for _, d := range filepath.SplitList(pathEnv) {
		if d == "" {
			d = "."
		}
		p := filepath.Join(d, name)
		err := checkExec(abs(p))
		if err == nil {
			if !filepath.IsAbs(p) && !strings.HasPrefix(p, ".") {
				p = "./" + p // Join dropped the "./" of "./name"
			}
			return p, nil
		}
		if firstErr == nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) {
			firstErr = err
		}
	}
	if firstErr != nil {
		return "", firstErr
	}
	return "", fmt.Errorf("%s: command not found: %w", name, exec.ErrNotFound)
}

func checkExec(p string) error {
	fi, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	if fi.IsDir() {
		return fmt.Errorf("%s: is a directory: %w", p, unix.EISDIR)
	}
	if err := unix.Access(p, unix.X_OK); err != nil {
		return fmt.Errorf("%s: not executable: %w", p, err)
	}
	return nil
}

// loopbackUp brings up lo in a new network namespace.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("SIOCGIFFLAGS lo: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("SIOCSIFFLAGS lo: %w", err)
	}
	return nil
}

// holdMain is the init run as usernsHoldArg: it holds its user namespace
// until stdin closes.
func holdMain() {
	_, _ = io.Copy(io.Discard, os.Stdin)
	os.Exit(0)
}
