package sandbox

import (
	"errors"
	"slices"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/mounts"
)

// TestConclude: the backends' one epilogue ends a session with the wall
// time's exit, else the init's own error, else — only when the init never
// reported an exit — what the backend's status makes of its process.
func TestConclude(t *testing.T) {
	spec := &Spec{Plan: &mounts.Plan{}, Limits: Limits{WallTime: time.Hour}}
	initErr := &Error{Code: ExitFedmemError, Stage: mounts.StageVerify, Msg: "x"}
	statusErr := errors.New("no status")
	for _, c := range []struct {
		name                string
		exit                int
		timedOut            bool
		runErr              error
		wantCode            int
		wantErr             error
		wantStatus, wantHit bool
	}{
		{name: "agent exit", exit: 3, wantCode: 3},
		{name: "init error", exit: -1, runErr: initErr, wantCode: -1, wantErr: initErr},
		{name: "no status", exit: -1, wantCode: -1, wantErr: statusErr, wantStatus: true},
		{name: "wall time", exit: -1, timedOut: true, runErr: initErr, wantCode: ExitTimedOut, wantHit: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			pl := &parentLimits{}
			pl.timedOut.Store(c.timedOut)
			called := false
			res, err := conclude(spec, &Result{ExitCode: c.exit}, pl, &tmpCap{}, c.runErr, func(*Result) error {
				called = true
				return statusErr
			})
			if res.ExitCode != c.wantCode || !errors.Is(err, c.wantErr) || (c.wantErr == nil && err != nil) {
				t.Errorf("conclude = exit %d, %v; want %d, %v", res.ExitCode, err, c.wantCode, c.wantErr)
			}
			if called != c.wantStatus {
				t.Errorf("status called: %v, want %v", called, c.wantStatus)
			}
			if got := slices.Contains(res.LimitsHit, "wall_time"); got != c.wantHit {
				t.Errorf("limits hit %v: wall_time %v, want %v", res.LimitsHit, got, c.wantHit)
			}
		})
	}
}

// TestHostLayers: what the parent knows goes into the init's layers, the
// backend's notes after the init's own, and a session's first result has
// no exit yet.
func TestHostLayers(t *testing.T) {
	id := &Identity{UID: 1000}
	h := hostLayers{backend: "runc", namespaces: sandboxNamespaces(&mounts.Plan{Network: mounts.NetworkNone}), pty: true,
		limits: []string{"pids=5"}, identity: id, enforced: []string{"e"}, notes: []string{"backend note"}}
	l := h.add(Layers{Seccomp: true, Notes: []string{"init note"}})
	if l.Backend != "runc" || !l.PTY || !l.Seccomp || l.Identity != id || !slices.Equal(l.Limits, []string{"pids=5"}) ||
		!slices.Equal(l.EnforcedBy, []string{"e"}) || !slices.Equal(l.Notes, []string{"init note", "backend note"}) {
		t.Errorf("add = %+v", l)
	}
	if !slices.Contains(l.Namespaces, "net") {
		t.Errorf("network none: namespaces %v lack net", l.Namespaces)
	}
	if ns := sandboxNamespaces(&mounts.Plan{Network: mounts.NetworkHost}); slices.Contains(ns, "net") || len(ns) != 6 {
		t.Errorf("network host: namespaces %v", ns)
	}
	if r := h.newResult(); r.ExitCode != -1 || r.Layers.Backend != "runc" {
		t.Errorf("newResult = %+v", r)
	}
}

// TestContainerInitNotes: a container session's init config and notes:
// the file rlimits asked of the init as in the namespace backend, the
// runtime's cgroup named for pids and memory, fedmem-run's kills, in the
// report's order; the agent's switch only for a root caller's identity.
func TestContainerInitNotes(t *testing.T) {
	spec := &Spec{Plan: &mounts.Plan{}, Argv: []string{"a"}, UID: 1000, GID: 1000,
		Limits: Limits{FileSize: 10, OpenFiles: 20, Pids: 30, Memory: 40, WallTime: time.Second, InboxBytes: 50}}
	cfg, notes := containerInit(spec, &idPlan{}, "runc")
	want := []string{"file_size=10 (RLIMIT_FSIZE)", "open_files=20 (RLIMIT_NOFILE)",
		"pids=30 (OCI linux.resources.pids: runc's cgroup)", "memory=40 (OCI linux.resources.memory: runc's cgroup)",
		"cpu: sessions share fedmem.slice's weight (OCI cgroupsPath /fedmem.slice/fedmem-<session>-<hex>: runc's cgroup at its default weight)",
		"wall_time=1s (fedmem-run kills the container)", "inbox_bytes=50 (fedmem-run watches the inbox and kills the container)"}
	if !slices.Equal(notes, want) {
		t.Errorf("notes:\n got %q\nwant %q", notes, want)
	}
	if !slices.Equal(cfg.Rlimits, []Rlimit{{unix.RLIMIT_FSIZE, 10}, {unix.RLIMIT_NOFILE, 20}}) || cfg.AgentSwitch {
		t.Errorf("cfg: rlimits %v, agent switch %v", cfg.Rlimits, cfg.AgentSwitch)
	}
	cfg, _ = containerInit(spec, &idPlan{cred: &syscall.Credential{}, agentGroups: []int{7}}, "runc")
	if !cfg.AgentSwitch || cfg.AgentUID != 1000 || !slices.Equal(cfg.AgentGroups, []int{7}) {
		t.Errorf("root caller: cfg %+v", cfg)
	}
	// The namespace backend says the parent's limits first, then the
	// same file rlimits.
	var nsCfg InitConfig
	if n := append(parentLimitNotes(spec.Limits, "sandbox"), fileRlimits(spec.Limits, &nsCfg)...); len(n) != 4 || n[0] != "wall_time=1s (fedmem-run kills the sandbox)" {
		t.Errorf("namespace notes %q", n)
	}
}
