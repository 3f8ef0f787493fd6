package gate

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// Decisions recorded off the pass's goroutine (issue 9). A held or
// rejected draft's decision costs two new files (its pending copy and its
// decision; the seen index is a hard link) and each new inode costs about
// a millisecond on a busy ext4 (its allocator skips recently deleted
// inodes): more than judging the draft. Inside a pass these writes are
// handed to a few goroutines while the pass decides the next drafts; the
// order of each draft's own writes is unchanged (pending copy, audit
// entry, decision, seen link), and so is what follows them:
//
//   - every flush of a group first waits for the records in flight
//     (drainRecords), so its barrier covers them and a claim is only
//     removed (its cleanup, queued after the record) once its decision is
//     durable;
//   - a draft whose content is being recorded waits for that record before
//     it looks the content up in seen/ (so it is found as a duplicate);
//   - a record that fails leaves the draft claimed and undecided (its
//     Decided time is cleared; the next pass decides it again) and the
//     error is reported by the flush.
//
// Promotions are not recorded here: their decisions are written at their
// group's flush, after the branch moved (groupcommit.go).

// recordWorkers bounds the records in flight.
const recordWorkers = 4

type recorder struct {
	wg   sync.WaitGroup
	sem  chan struct{}
	mu   sync.Mutex
	sums map[string]int
	// cleanups of recorded drafts, for the pass's queue (drainRecords
	// moves them there, on the pass's goroutine); errs of failed records.
	cleanups []func() error
	errs     []error
}

// recordAsync starts recording d (finish's record and, once done, queues
// its cleanup) and reports whether it did: only inside a pass, only for a
// decision not yet recorded and not a promotion.
func (g *Gate) recordAsync(in *inbox, c Claim, d *Decision, pendingBytes []byte) bool {
	if g.pass == nil || !d.Decided.IsZero() || d.State == StatePromoted {
		return false
	}
	r := g.rec
	if r == nil {
		r = &recorder{sem: make(chan struct{}, recordWorkers), sums: map[string]int{}}
		g.rec = r
	}
	sum := d.SHA256
	r.mu.Lock()
	if sum != "" {
		r.sums[sum]++
	}
	r.mu.Unlock()
	r.wg.Add(1)
	r.sem <- struct{}{}
	go func() {
		defer func() { <-r.sem; r.wg.Done() }()
		err := g.record(d, pendingBytes)
		if err != nil {
			d.Decided = time.Time{} // not decided: the claim stays
		}
		r.mu.Lock()
		if err != nil {
			r.errs = append(r.errs, fmt.Errorf("claim %s: %w", d.ID, err))
		} else {
			r.cleanups = append(r.cleanups, g.cleanupFor(in, c, d))
		}
		if sum != "" {
			if r.sums[sum]--; r.sums[sum] == 0 {
				delete(r.sums, sum)
			}
		}
		r.mu.Unlock()
	}()
	return true
}

// recordingSum reports whether content with this hash is being recorded.
func (g *Gate) recordingSum(sum string) bool {
	r := g.rec
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sums[sum] > 0
}

// drainRecords waits for the records in flight and moves their cleanups
// to the pass's queue (after the next barrier); it returns the errors of
// failed records once.
func (g *Gate) drainRecords() error {
	r := g.rec
	if r == nil {
		return nil
	}
	r.wg.Wait()
	r.mu.Lock()
	cleanups, errs := r.cleanups, r.errs
	r.cleanups, r.errs = nil, nil
	r.mu.Unlock()
	for _, f := range cleanups {
		if !g.deferCleanup(f) {
			errs = append(errs, f()) // no pass: nothing to wait for
		}
	}
	return errors.Join(errs...)
}
