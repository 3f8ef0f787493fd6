package gate

import (
	"context"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"

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
		sessions, _ := in.sessions()
		for _, s := range sessions {
			p := filepath.Join(inboxDir, s)
			if !watched[p] && w.Add(p) == nil {
				watched[p] = true
			}
		}
	}
	pass := func() {
		watch()
		s, err := g.Once()
		report(s, err)
	}
	pass()
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
		case err := <-w.Errors:
			g.log.Warn("inotify", "err", err)
		case <-debounce:
			debounce = nil
			pass()
		case <-tick.C:
			pass()
			g.sweepTick() // withhold stale notes (sweep.go), at most every SweepEvery
		}
	}
}
