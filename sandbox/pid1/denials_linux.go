package pid1

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/sandbox"
	"github.com/fedmem/fedmem/sandbox/seccomp"
)

// maxDeniedReports bounds the denials the init reports one by one, of
// every kind together: a hostile agent calling mount or writing into the
// vault in a loop must not flood the sync pipe, the events file or
// fedmem-run.
const maxDeniedReports = 256

// denialReporter sends the init's "denied" messages on the sync pipe, for
// both listeners (refused system calls, filesystem writes).
type denialReporter struct {
	sync *os.File
	n    atomic.Int64
	// What the filesystem listener needs to tell a refused write from an
	// allowed one.
	plan       *mounts.Plan
	landlockFS bool
	agentUID   int // -1: the agent has the init's uid
	agentGID   int
	// The listener (fd -1: none) and the pipe that wakes its thread.
	fd           int
	listener     *seccomp.Listener
	wakeR, wakeW int
}

// report sends one denial, or the one truncation marker after
// maxDeniedReports.
func (r *denialReporter) report(d *sandbox.Denied) {
	k := r.n.Add(1)
	if k > maxDeniedReports+1 {
		return
	}
	if k == maxDeniedReports+1 {
		d = &sandbox.Denied{Kind: d.Kind, Truncated: true, Hint: "more operations were refused; only the first 256 are reported"}
	}
	// One write per message, below PIPE_BUF (paths are capped, see
	// fsdenials_linux.go): atomic beside the init's own messages and the
	// other listener's on the same pipe.
	_ = json.NewEncoder(r.sync).Encode(sandbox.InitMessage{Type: sandbox.MsgDenied, Denial: d})
}

// applySeccompReporting installs the seccomp filter with a user
// notification listener (TSYNC_ESRCH|NEW_LISTENER, Linux 5.7) and returns
// the reporter that serves it: the forker thread calls serve once the
// agent is forked (fsdenials_linux.go says why that thread). Each refused
// call is answered with the rule's errno — decided from the kernel's
// seccomp_data by the errno filter itself, never from memory the agent
// controls — and reported on the sync pipe. With cfg.FSDenials each write
// call continues and is reported when the kernel is expected to refuse
// it; without, the filter has no write section and writes never leave the
// kernel. Where the kernel has no such listener it installs the plain
// errno filter and says in a layer note that refusals are not reported.
func applySeccompReporting(cfg *sandbox.InitConfig, l *sandbox.Layers, sync *os.File) (*denialReporter, error) {
	rep := &denialReporter{sync: sync, plan: cfg.Plan, landlockFS: l.LandlockFS, agentUID: -1, agentGID: -1, fd: -1, wakeR: -1, wakeW: -1}
	if cfg.AgentSwitch {
		rep.agentUID, rep.agentGID = cfg.AgentUID, cfg.AgentGID
	}
	d, err := seccomp.NewDecider(runtime.GOARCH, cfg.Plan.SocketFamilies...)
	if err != nil {
		return nil, err
	}
	var w *seccomp.Writes // nil: no write call reaches the listener
	if cfg.FSDenials {
		if w, err = seccomp.NewWrites(runtime.GOARCH); err != nil {
			return nil, err
		}
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return nil, fmt.Errorf("pipe: %w", err)
	}
	fd, err := seccomp.ApplyNotify(cfg.FSDenials, cfg.Plan.SocketFamilies...)
	if errors.Is(err, seccomp.ErrNoListener) {
		unix.Close(p[0])
		unix.Close(p[1])
		l.Notes = append(l.Notes, "denied system calls and filesystem writes are not reported: "+err.Error())
		return rep, applySeccomp(cfg, l)
	}
	if err != nil {
		return nil, err
	}
	l.Seccomp = true
	if cfg.FSDenials {
		l.FSDenials = true
		l.Notes = append(l.Notes, "denied system calls and refused filesystem writes reported (seccomp user notification held by pid 1; writes continue: the kernel decides)")
	} else {
		l.Notes = append(l.Notes, "denied system calls reported (seccomp user notification held by pid 1); "+sandbox.FSDenialsOffNote)
	}
	rep.fd, rep.wakeR, rep.wakeW = fd, p[0], p[1]
	rep.listener = &seccomp.Listener{Fd: fd, Decider: d, Writes: w, Wake: p[0]}
	if err := rep.listener.Prepare(); err != nil {
		return nil, err
	}
	return rep, nil
}

// denialHint says how to live with a refused system call. No profile
// setting lifts a seccomp rule (the deny-list is the same for every
// profile: docs/seccomp.md), so the hint names what a profile can do
// instead.
func denialHint(rule string) string {
	switch rule {
	case "unshare-namespaces", "clone-namespaces", "setns":
		return "no profile allows new namespaces: a nested sandbox (bwrap, Codex's own) cannot start inside fedmem; " +
			"turn the agent's own sandbox off (Codex: --sandbox danger-full-access) and let fedmem be the sandbox (docs/seccomp.md)"
	case "mount":
		return "no profile allows mounts: give the agent the paths it needs with writable:, state: or home.mode in its profile (docs/profiles.md)"
	case "suid-sgid":
		return "setuid/setgid bits can never be set inside fedmem: files the agent writes belong to you on the host " +
			"(docs/seccomp.md); set the mode without them (chmod 755; for a directory that inherited set-group-id, chmod 00755), " +
			"or outside fedmem if you really mean it"
	case "":
		return "refused by the seccomp deny-list (docs/seccomp.md)"
	}
	return "refused by seccomp rule " + rule + " for every profile (docs/seccomp.md); it cannot be allowed in a profile: run this step outside fedmem"
}
