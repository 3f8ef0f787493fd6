package gate

import (
	"context"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/fedmem/fedmem/gate/validate"
	"github.com/fedmem/fedmem/gate/verify"
	"github.com/fedmem/fedmem/vault"
)

// Run handles drafts until ctx is cancelled: a pass on start, after inbox
// events (inotify on 90-inbox/ and every session folder, debounced) and
// every interval as a backstop (events can be missed: queue overflow, new
// sessions). Cancelling ctx lets the pass in progress finish (drain), then
// Run returns. report is called after every pass.
func (g *Gate) Run(ctx context.Context, interval time.Duration, report func(*Summary, error)) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer w.Close()
	// SIGTERM (ctx) cuts off a fetch or push in progress (remoteio.go):
	// a silent remote cannot keep the pass, and so Run, from ending.
	g.remote.SetStop(ctx)
	defer g.remote.SetStop(nil)
	// Verifiers run outside the lock (gate/verify.Pool); a run's end starts
	// a pass. Cancelling ctx kills the runs; Run returns once they ended.
	var verified <-chan struct{}
	if g.verify == nil {
		g.verify = verify.NewPool(ctx, verify.NewRunner(g.vaultDir).Run)
		defer func() {
			g.verify.Wait()
			g.mu.Lock()
			g.verify = nil
			g.mu.Unlock()
		}()
	}
	if g.verify != nil {
		verified = g.verify.Ends()
	}
	inboxDir := filepath.Join(g.vaultDir, vault.InboxDir)
	watched := map[string]bool{}
	watch := func() {
		if !watched[inboxDir] {
			if w.Add(inboxDir) == nil {
				watched[inboxDir] = true
			}
		}
		in, err := g.openInbox()
		if err != nil {
			return
		}
		defer in.Close()
		sessions, _ := in.Sessions()
		for _, s := range sessions {
			p := filepath.Join(inboxDir, s)
			if !watched[p] && w.Add(p) == nil {
				watched[p] = true
			}
		}
	}
	// The secret scanner compiles its rules on first use (a few hundred
	// ms, seconds on a loaded machine): done now, beside the first pass,
	// not on the first draft. (Done before the first pass instead, the
	// changed timing exposed a recovery race, since fixed: docs/gate.md,
	// Group commit, "Recovery"; TestRecoveryKillNineTwice.)
	go validate.Secrets(nil)
	// Spare files for the next burst's writes, made while no pass runs.
	if g.spares != nil {
		kctx, kcancel := context.WithCancel(ctx)
		kept := make(chan struct{})
		go func() { defer close(kept); g.spares.Keep(kctx, g.opts.Spares, g.idle) }()
		defer func() { kcancel(); <-kept }()
	}
	// busy: drafts were decided or the inbox changed since the last tick.
	busy := false
	pass := func() {
		watch()
		s, err := g.Once()
		if s != nil && s.Timing != nil {
			s.Timing.end()
		}
		if s != nil && (len(s.Decisions) > 0 || s.Deferred > 0) {
			busy = true
		}
		report(s, err)
	}
	pass()
	// A sweep reads every note in force (O(vault)) holding the gate's
	// lock, seconds on a loaded machine: while the inbox is busy (sessions
	// or drafts arriving, drafts decided since the last tick) it waits for
	// a quiet tick, at most SweepEvery longer, so that a burst is not
	// stalled behind it (issue 9).
	var sweepWaits time.Time
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var debounce <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return nil
			}
			// A short debounce: a draft renamed into place is whole, and
			// drafts arriving during a pass are taken by the next one (the
			// events queue meanwhile), so latency at a steady rate stays
			// near one pass (issue 9).
			if ev.Op&(fsnotify.Create|fsnotify.Rename|fsnotify.Write) != 0 && debounce == nil {
				debounce = time.After(5 * time.Millisecond)
			}
			busy = true
		case err := <-w.Errors:
			g.log.Warn("inotify", "err", err)
		case <-debounce:
			debounce = nil
			pass()
		case <-verified:
			pass()
		case <-tick.C:
			pass()
			wasBusy := busy || debounce != nil
			busy = false
			if wasBusy && (sweepWaits.IsZero() || time.Since(sweepWaits) < SweepEvery) {
				if sweepWaits.IsZero() {
					sweepWaits = time.Now()
				}
				continue
			}
			sweepWaits = time.Time{}
			g.sweepTick() // withhold stale notes (sweephost.go, gate/sweep), at most every SweepEvery
		}
	}
}

// PassTiming says where one pass (Once) spent its time, in milliseconds:
// listing sessions and claiming their drafts, deciding the claims (with the
// group commits flushed on the way), publishing the last group; Total adds
// the sync with the remote. Claims is the number of claims the pass
// decided (new and left over), Groups the group commits it flushed.
type PassTiming struct {
	Start     time.Time `json:"start"`
	ClaimMs   float64   `json:"claim_ms"`
	DecideMs  float64   `json:"decide_ms"`
	PublishMs float64   `json:"publish_ms"`
	TotalMs   float64   `json:"total_ms"`
	// FlushMs: the part of DecideMs spent publishing full groups.
	FlushMs float64 `json:"flush_ms"`
	// CPUMs: CPU time of the whole process (all threads) during the pass.
	CPUMs  float64 `json:"cpu_ms"`
	Claims int     `json:"claims"`
	Groups int     `json:"groups"`
	last   time.Time
	cpu0   time.Duration
}

func startTiming() *PassTiming {
	return &PassTiming{Start: time.Now(), cpu0: processCPU()}
}

// end sets the totals.
func (t *PassTiming) end() {
	t.TotalMs = msOf(time.Since(t.Start))
	t.CPUMs = msOf(processCPU() - t.cpu0)
}

func msOf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// lap sets *f to the time since the previous lap (or the start).
func (t *PassTiming) lap(f *float64) {
	if t.last.IsZero() {
		t.last = t.Start
	}
	now := time.Now()
	*f = msOf(now.Sub(t.last))
	t.last = now
}

// passIntake: a pass takes in drafts that arrived while it decided (Once)
// until it is this old; then it ends, and Run's loop (cancellation, the
// next events, ticks) gets its turn.
var passIntake = 2 * time.Second

// spareIdle is how long after a pass the spare pool is filled (passes of
// a burst follow each other within a debounce).
const spareIdle = 200 * time.Millisecond

// idle reports that no pass runs and none ended in the last spareIdle.
func (g *Gate) idle() bool {
	return g.passing.Load() == 0 && time.Since(time.Unix(0, g.lastPass.Load())) >= spareIdle
}

// groupDue reports whether the open group of a pass should be flushed
// before the next claim is decided: when it is full (groupMaxDrafts), or
// when its oldest draft has waited groupMaxWait — and at least twice what
// a flush has cost lately. A flush has a fixed cost (two barriers, a pack,
// the branch, the work tree and index); on a loaded machine it can take
// longer than groupMaxWait, and flushing that often would spend most of
// the pass on flushes while every draft behind waits longer (issue 9: a
// burst decided in groups of a dozen). Bounding the flushes to a third of
// the pass keeps a group's latency proportional to what it costs.
func (g *Gate) groupDue() bool {
	n, opened := g.commits.Group()
	if n == 0 || n < groupMaxDrafts && time.Since(opened) < groupMaxWait {
		return false
	}
	return n >= groupMaxDrafts || time.Since(opened) >= 2*g.flushCost
}

// flushed notes what a flush cost (a moving average) and returns it in
// milliseconds.
func (g *Gate) flushed(d time.Duration) float64 {
	if g.flushCost == 0 {
		g.flushCost = d
	} else {
		g.flushCost = (3*g.flushCost + d) / 4
	}
	return msOf(d)
}
