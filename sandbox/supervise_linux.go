package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/sandbox/inboxcap"
)

// readInit turns the init's JSON lines on r into messages; the channel is
// closed when r ends (the init and everything holding its sync pipe exited).
func readInit(r io.Reader) <-chan InitMessage {
	msgs := make(chan InitMessage, 4)
	go func() {
		defer close(msgs)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var m InitMessage
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				msgs <- m
			}
		}
	}()
	return msgs
}

// watch is the parent's side of a running init, shared by the namespace and
// the container backends so that an event or a relay step added for one
// reaches the other (the container backends once lacked the tmp_bytes
// watcher and the start-up phases because they kept a copy of this loop).
type watch struct {
	spec    *Spec
	res     *Result
	host    hostLayers      // what the parent knows, added to the init's layers
	relay   *ptyRelay       // nil without a terminal
	proc    *os.Process     // the process signals are forwarded to
	kill    func()          // ends the whole sandbox
	masters <-chan *os.File // the PTY master, once the init sends it
	sigs    <-chan os.Signal
	// started, if set, runs when the init reports its layers and returns
	// extra fields for the "started" event.
	started func(m InitMessage) map[string]any
}

// run relays messages, the terminal and signals until the init's messages
// end, records the outcome in w.res and returns the init's own error.
// Cancelling ctx kills the sandbox once and keeps waiting for the end.
func (w *watch) run(ctx context.Context, msgs <-chan InitMessage) error {
	var runErr error
	done := ctx.Done()
	exited := false
	for msgs != nil {
		select {
		case m, ok := <-msgs:
			if !ok {
				if !exited {
					Stamp("agent-exit") // the init died without saying
				}
				msgs = nil
				break
			}
			switch m.Type {
			case MsgStarted:
				if m.Layers != nil {
					w.res.Layers = w.host.add(*m.Layers)
					fields := map[string]any{"layers": w.res.Layers}
					if w.started != nil {
						for k, v := range w.started(m) {
							fields[k] = v
						}
					}
					emit(w.spec, "started", fields)
				}
			case MsgError:
				runErr = m.Err
			case MsgStopped:
				emit(w.spec, "stopped", map[string]any{"signal": m.Signal})
				if w.relay != nil {
					w.relay.Suspend(w.proc)
				}
			case MsgDenied:
				if m.Denial != nil {
					emit(w.spec, "denied", m.Denial.Fields())
				}
			case MsgExit:
				Stamp("agent-exit") // the teardown starts (EndPhases)
				exited = true
				w.res.ExitCode, w.res.Signal = m.Code, m.Signal
				if m.CoversLost != "" {
					w.res.CoversLost = m.CoversLost
					emit(w.spec, "persistence", map[string]any{"covers_lost": m.CoversLost})
				}
			}
		case m := <-w.masters:
			if m != nil {
				w.relay.Start(m, w.proc)
			}
		case s := <-w.sigs:
			_ = w.proc.Signal(s)
		case <-done:
			w.kill()
			done = nil
		}
	}
	return runErr
}

// sandboxNamespaces are the namespaces every backend gives the sandbox:
// user, mount, pid, ipc, uts and cgroup, and net in every network mode but
// host (fail closed).
func sandboxNamespaces(pl *mounts.Plan) []string {
	ns := []string{"user", "mount", "pid", "ipc", "uts", "cgroup"}
	if pl.Network.OwnNetNS() {
		ns = append(ns, "net")
	}
	return ns
}

// hostLayers is what the parent knows of the layers, for every backend;
// the init reports the rest.
type hostLayers struct {
	backend    string
	namespaces []string
	pty        bool
	limits     []string // how each limit is enforced
	identity   *Identity
	enforced   []string // the backend's enforced_by
	notes      []string // the backend's own notes, after the init's
}

// add puts what the parent knows into l, the init's layers.
func (h hostLayers) add(l Layers) Layers {
	l.Backend, l.Namespaces, l.PTY, l.Limits = h.backend, h.namespaces, h.pty, h.limits
	l.Identity = h.identity
	l.EnforcedBy = h.enforced
	l.Notes = append(l.Notes, h.notes...)
	return l
}

// newResult is a session's result before the init says anything: no exit
// yet (-1), the parent's layers.
func (h hostLayers) newResult() *Result {
	return &Result{ExitCode: -1, Layers: h.add(Layers{})}
}

// reap waits for the process that held the init (the init itself, or the
// runtime helper that ran it) once the init's messages ended, and drains
// the terminal relay; it returns the wait's error for conclude's status.
func (w *watch) reap(cmd *exec.Cmd) error {
	werr := cmd.Wait()
	if w.relay != nil && w.relay.master != nil {
		w.relay.Finish()
	}
	return werr
}

// conclude is every backend's epilogue once its init is reaped and the
// backend has put in res what only it knows (its cgroup's hits): the
// limits the parent enforced (wall time, inbox bytes, tmp bytes) are
// recorded and told, and the session ends with the wall time's exit, else
// the init's own error (runErr), else — when the init never reported an
// exit — what status makes of the reaped process (the signal that killed
// it, or an error at StageInit).
func conclude(spec *Spec, res *Result, pl *parentLimits, tmp *tmpCap, runErr error, status func(res *Result) error) (*Result, error) {
	pl.record(spec, res)
	tmp.finish(res)
	if pl.end(spec, res) {
		return res, nil
	}
	if runErr != nil {
		return res, runErr
	}
	if res.ExitCode < 0 {
		return res, status(res)
	}
	return res, nil
}

// fileRlimits asks the init for the rlimits of limits.file_size and
// limits.open_files, the same in every backend, and says so.
func fileRlimits(l Limits, cfg *InitConfig) (notes []string) {
	if l.FileSize > 0 {
		cfg.Rlimits = append(cfg.Rlimits, Rlimit{Resource: unix.RLIMIT_FSIZE, Max: uint64(l.FileSize)})
		notes = append(notes, fmt.Sprintf("file_size=%d (RLIMIT_FSIZE)", l.FileSize))
	}
	if l.OpenFiles > 0 {
		cfg.Rlimits = append(cfg.Rlimits, Rlimit{Resource: unix.RLIMIT_NOFILE, Max: uint64(l.OpenFiles)})
		notes = append(notes, fmt.Sprintf("open_files=%d (RLIMIT_NOFILE)", l.OpenFiles))
	}
	return notes
}

// parentLimitNotes say how the limits the parent enforces itself are, for
// a sandbox called what ("sandbox", "container").
func parentLimitNotes(l Limits, what string) (notes []string) {
	if l.WallTime > 0 {
		notes = append(notes, "wall_time="+l.WallTime.String()+" (fedmem-run kills the "+what+")")
	}
	if l.InboxBytes > 0 {
		notes = append(notes, fmt.Sprintf("inbox_bytes=%d (fedmem-run watches the inbox and kills the %s)", l.InboxBytes, what))
	}
	return notes
}

// parentLimits are the limits the parent enforces itself for every backend:
// the wall time and the inbox byte cap, each ending the sandbox with kill.
type parentLimits struct {
	timedOut, inboxFull atomic.Bool
	inboxReason         atomic.Value // string: why the inbox watcher ended the session
	stopWatch           chan struct{}
	timer               *time.Timer
}

// startParentLimits arms the limits of spec; stop them with stop when the
// session is over.
func startParentLimits(spec *Spec, kill func()) *parentLimits {
	p := &parentLimits{}
	if spec.Limits.InboxBytes > 0 {
		p.stopWatch = make(chan struct{})
		over := func(reason string) {
			p.inboxReason.Store(reason)
			p.inboxFull.Store(true)
			kill()
		}
		// The folder made and bound, not its name (Spec.InboxDir); its
		// own descriptor, taken now, while the spec's is open. Without
		// one (no folder made) the name is opened without following links.
		if spec.InboxDir == nil {
			go inboxcap.Watch(spec.Plan.Inbox, spec.Limits.InboxBytes, p.stopWatch, over)
		} else if root, err := dupCloexec(spec.InboxDir); err == nil {
			go inboxcap.WatchDir(root, spec.Plan.Inbox, spec.Limits.InboxBytes, p.stopWatch, over)
		} else {
			over(fmt.Sprintf("cannot inspect the inbox %s: %v", spec.Plan.Inbox, err))
		}
	}
	if spec.Limits.WallTime > 0 {
		p.timer = time.AfterFunc(spec.Limits.WallTime, func() {
			p.timedOut.Store(true)
			kill()
		})
	}
	return p
}

// dupCloexec is a close-on-exec copy of f's descriptor (an error when f
// is nil).
func dupCloexec(f *os.File) (int, error) {
	if f == nil {
		return -1, os.ErrInvalid
	}
	return unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
}

func (p *parentLimits) stop() {
	if p.stopWatch != nil {
		close(p.stopWatch)
	}
	if p.timer != nil {
		p.timer.Stop()
	}
}

// record adds to res what ended the session from here: file_size (killed by
// SIGXFSZ, or a shell reporting that of its child), wall_time, inbox_bytes.
func (p *parentLimits) record(spec *Spec, res *Result) {
	if (res.Signal == int(unix.SIGXFSZ) || res.ExitCode == 128+int(unix.SIGXFSZ)) && spec.Limits.FileSize > 0 {
		res.LimitsHit = append(res.LimitsHit, "file_size")
	}
	if p.timedOut.Load() {
		res.LimitsHit = append(res.LimitsHit, "wall_time")
	}
	if p.inboxFull.Load() {
		res.LimitsHit = append(res.LimitsHit, "inbox_bytes")
		res.Layers.Notes = append(res.Layers.Notes, fmt.Sprintf("inbox_bytes: %v", p.inboxReason.Load()))
		if res.ExitCode < 0 {
			res.ExitCode, res.Signal = 128+int(unix.SIGKILL), int(unix.SIGKILL)
		}
	}
}

// end emits one limit event per hit and, when the wall time ran out, sets
// the session's exit to ExitTimedOut; it reports whether it did.
func (p *parentLimits) end(spec *Spec, res *Result) bool {
	for _, x := range res.LimitsHit {
		emit(spec, "limit", map[string]any{"limit": x})
	}
	if p.timedOut.Load() {
		res.ExitCode, res.Signal = ExitTimedOut, int(unix.SIGKILL)
		return true
	}
	return false
}
