package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// readInit turns the init's JSON lines on r into messages; the channel is
// closed when r ends (the init and everything holding its sync pipe exited).
func readInit(r io.Reader) <-chan initMessage {
	msgs := make(chan initMessage, 4)
	go func() {
		defer close(msgs)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			var m initMessage
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
	host    func(Layers) Layers // adds what the parent knows to the init's layers
	relay   *ptyRelay           // nil without a terminal
	proc    *os.Process         // the process signals are forwarded to
	kill    func()              // ends the whole sandbox
	masters <-chan *os.File     // the PTY master, once the init sends it
	sigs    <-chan os.Signal
	// started, if set, runs when the init reports its layers and returns
	// extra fields for the "started" event.
	started func(m initMessage) map[string]any
}

// run relays messages, the terminal and signals until the init's messages
// end, records the outcome in w.res and returns the init's own error.
// Cancelling ctx kills the sandbox once and keeps waiting for the end.
func (w *watch) run(ctx context.Context, msgs <-chan initMessage) error {
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
			case msgStarted:
				if m.Layers != nil {
					w.res.Layers = w.host(*m.Layers)
					fields := map[string]any{"layers": w.res.Layers}
					if w.started != nil {
						for k, v := range w.started(m) {
							fields[k] = v
						}
					}
					emit(w.spec, "started", fields)
				}
			case msgError:
				runErr = m.Err
			case msgStopped:
				emit(w.spec, "stopped", map[string]any{"signal": m.Signal})
				if w.relay != nil {
					w.relay.Suspend(w.proc)
				}
			case msgDenied:
				if m.Denial != nil {
					emit(w.spec, "denied", m.Denial.Fields())
				}
			case msgExit:
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
		go watchInboxCap(spec.Plan.Inbox, spec.Limits.InboxBytes, p.stopWatch, func(reason string) {
			p.inboxReason.Store(reason)
			p.inboxFull.Store(true)
			kill()
		})
	}
	if spec.Limits.WallTime > 0 {
		p.timer = time.AfterFunc(spec.Limits.WallTime, func() {
			p.timedOut.Store(true)
			kill()
		})
	}
	return p
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
