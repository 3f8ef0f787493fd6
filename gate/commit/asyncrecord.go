package commit

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/record"
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
//     (DrainRecords), so its barrier covers them and a claim is only
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
	// cleanups of recorded drafts, for the pass's queue (DrainRecords
	// moves them there, on the pass's goroutine); errs of failed records.
	cleanups []func() error
	errs     []error
}

// RecordAsync starts recording d (finish's record and, once done, queues
// its cleanup) and reports whether it did: only inside a pass, only for a
// decision not yet recorded and not a promotion.
func (e *Engine) RecordAsync(d *record.Decision, rec, cleanup func() error) bool {
	if e.pass == nil || !d.Decided.IsZero() || d.State == decide.StatePromoted {
		return false
	}
	r := e.rec
	if r == nil {
		r = &recorder{sem: make(chan struct{}, recordWorkers), sums: map[string]int{}}
		e.rec = r
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
		err := rec()
		if err != nil {
			d.Decided = time.Time{} // not decided: the claim stays
		}
		r.mu.Lock()
		if err != nil {
			r.errs = append(r.errs, fmt.Errorf("claim %s: %w", d.ID, err))
		} else {
			r.cleanups = append(r.cleanups, cleanup)
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

// RecordingSum reports whether content with this hash is being recorded.
func (e *Engine) RecordingSum(sum string) bool {
	r := e.rec
	if r == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sums[sum] > 0
}

// DrainRecords waits for the records in flight and moves their cleanups
// to the pass's queue (after the next barrier); it returns the errors of
// failed records once.
func (e *Engine) DrainRecords() error {
	r := e.rec
	if r == nil {
		return nil
	}
	r.wg.Wait()
	r.mu.Lock()
	cleanups, errs := r.cleanups, r.errs
	r.cleanups, r.errs = nil, nil
	r.mu.Unlock()
	for _, f := range cleanups {
		if !e.DeferCleanup(f) {
			errs = append(errs, f()) // no pass: nothing to wait for
		}
	}
	return errors.Join(errs...)
}
