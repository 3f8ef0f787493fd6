package gate

import (
	"errors"
	"runtime"
	"sync"

	"github.com/fedmem/fedmem/gate/validate"
)

// Validation in parallel (issue 9). A pass decides its claims one at a
// time, in order: the verdict and the promotion depend on the branch as the
// drafts before left it. Reading a claimed draft and validating it do not:
// they depend on its bytes only. A prefetcher reads and validates the
// claims ahead of their turn on the other cores, at most prefetchAhead
// drafts ahead, and changes nothing on disk (a draft that became unreadable
// is returned to its session on its turn, as before). Decisions stay in the
// same order and are the same.

// prefetchAhead bounds the drafts read ahead (their bytes are held).
const prefetchAhead = 32

// errMustReturn: a read ahead met a draft the gate may no longer read.
var errMustReturn = errors.New("claimed draft became unreadable")

// prefetched is one claim read (and, when whole, validated) ahead.
type prefetched struct {
	c   Claim
	rr  readResult
	res validate.Result
	// validated: res holds validate.DraftNamed's result for rr.Bytes.
	validated bool
	// err: the read ahead failed; the draft's turn does it again.
	err error
}

type prefetcher struct {
	items []chan *prefetched
	slots chan struct{}
	stop  chan struct{}
	wg    sync.WaitGroup
}

// startPrefetch reads and validates ids in order on up to GOMAXPROCS-1
// goroutines (at least one).
func (g *Gate) startPrefetch(ids []string, maxBytes int64) *prefetcher {
	p := &prefetcher{items: make([]chan *prefetched, len(ids)), slots: make(chan struct{}, prefetchAhead), stop: make(chan struct{})}
	for i := range p.items {
		p.items[i] = make(chan *prefetched, 1)
	}
	work := make(chan int)
	workers := max(1, runtime.GOMAXPROCS(0)-1)
	for w := 0; w < workers; w++ {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			for i := range work {
				p.items[i] <- g.prefetchOne(ids[i], maxBytes)
			}
		}()
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(work)
		for i := range ids {
			select {
			case p.slots <- struct{}{}:
			case <-p.stop:
				return
			}
			select {
			case work <- i:
			case <-p.stop:
				return
			}
		}
	}()
	return p
}

func (g *Gate) prefetchOne(id string, maxBytes int64) *prefetched {
	pf := &prefetched{}
	if pf.c, pf.err = g.claimRecord(id); pf.err != nil {
		return pf
	}
	if d, err := g.ledger.Load(id); err != nil || d != nil {
		pf.err = errors.New("decided or unreadable decision: not read ahead")
		return pf
	}
	if pf.rr, pf.err = g.readClaimAt(id, maxBytes, false); pf.err != nil || pf.rr.Retry || pf.rr.Reject != nil {
		return pf
	}
	res, err := validate.DraftNamed(pf.c.Name, pf.rr.Bytes)
	if err != nil {
		pf.err = err
		return pf
	}
	pf.res, pf.validated = res, true
	return pf
}

// take returns the i-th claim's read ahead, waiting for it (nil when the
// prefetcher was stopped or i is past its list).
func (p *prefetcher) take(i int) *prefetched {
	if p == nil || i >= len(p.items) {
		return nil
	}
	pf := <-p.items[i]
	<-p.slots
	return pf
}

// close stops the prefetcher and waits for its goroutines.
func (p *prefetcher) close() {
	if p == nil {
		return
	}
	close(p.stop)
	p.wg.Wait() // items are buffered: a worker never waits to hand one over
}
