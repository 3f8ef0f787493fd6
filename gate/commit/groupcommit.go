package commit

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/durable"
	"github.com/fedmem/fedmem/gate/record"
	"github.com/fedmem/fedmem/vault/repo"
)

// Group commit (issue 9). A pass (Once) decides many drafts; done one at a
// time, each promotion cost about seven loose objects, a ref move, an index
// rewrite and some twenty fsyncs. Inside a pass the gate now works in
// groups:
//
//   - state files, receipts' bookkeeping, audit entries and work-tree files
//     are written without their own fsync; the paths are remembered and
//     fsynced together (in parallel, which the filesystem's journal turns
//     into few commits) at a barrier;
//   - promotions are committed in memory, one commit per draft chained on
//     the previous one (the committing/ID marker of each is written first,
//     naming the branch's on-disk tip as the base of the recovery walk);
//   - at a flush: barrier (markers and claims durable), one packfile with
//     every object of the group (fsynced), one compare-and-swap of the
//     branch (fsynced), one work-tree and index update, then the promoted
//     drafts' decisions, a second barrier, and only then the receipts and
//     the removal of claims and markers.
//
// A gate killed anywhere in a flush loses nothing and decides nothing
// twice: before the ref moves, the drafts are still claimed and undecided
// and the pack is unreferenced (re-promoted on restart); after it moves,
// each draft's commit is found by its Fedmem-Draft trailer between HEAD and
// the marker's base (AdoptEarlierCommit). A claim is only removed after its
// decision is durable.

// pass is the state of one group (see the top of this file).
type pass struct {
	sy    *durable.Syncer
	roots []string
	// deferred record the decisions of promoted drafts, after the branch
	// moved; cleanups write receipts and drop claims, after a barrier.
	deferred []func() error
	cleanups []func() error
	// sums are the content hashes promoted in the open group (a duplicate
	// of one flushes the group first, so it finds the decision).
	sums    map[string]bool
	drafts  int
	opened  time.Time
	decided map[*record.Decision]bool
	// marked are the drafts promoted in the open group; their marker is
	// written once for the group, at its flush (GroupMarker).
	marked []string
	// adopted are the drafts whose earlier commit (a killed gate's) was
	// adopted in the open group: their files are checked out at its flush,
	// so their decisions are recorded after it, like the group's own
	// promotions (recovery race, issue 24).
	adopted map[string]bool
	// tail is the previous group's end (its second barrier, then its
	// cleanups) running while the gate decides the next group; nil when
	// none runs. It yields that end's error once.
	tail chan error
}

// BeginPass starts group mode for a pass. Only Once uses it; reviews and
// sweeps keep writing (and syncing) as they go.
func (e *Engine) BeginPass() {
	p := &pass{sy: durable.NewSyncer(), sums: map[string]bool{}, decided: map[*record.Decision]bool{}, adopted: map[string]bool{}}
	p.roots = []string{e.state, e.vault}
	durable.Defer(p.roots, p.sy)
	e.audit.SetDeferSync(true)
	e.pass = p
	e.repo.BeginBatch()
}

// EndPass flushes what is left and leaves group mode.
func (e *Engine) EndPass() error {
	if e.pass == nil {
		return nil
	}
	err := e.Flush()
	p := e.pass
	err = errors.Join(err, p.joinTail())
	e.pass = nil
	e.repo.AbortBatch()
	durable.Undefer(p.roots, p.sy)
	e.audit.SetDeferSync(false)
	return errors.Join(err, e.barrier(p))
}

// Group returns how many drafts the open group handled and when its
// first one was counted (0 outside a group; the gate's groupDue decides
// when to flush).
func (e *Engine) Group() (drafts int, opened time.Time) {
	if p := e.pass; p != nil {
		return p.drafts, p.opened
	}
	return 0, time.Time{}
}

// Counted notes one more draft handled in the open group.
func (e *Engine) Counted() {
	if p := e.pass; p != nil {
		if p.drafts == 0 {
			p.opened = time.Now()
		}
		p.drafts++
	}
}

// PendingSum reports whether content with this hash is promoted in the
// open group and not yet recorded.
func (e *Engine) PendingSum(sum string) bool { return e.pass != nil && e.pass.sums[sum] }

func (e *Engine) barrier(p *pass) error {
	if err := e.audit.Sync(); err != nil {
		return err
	}
	return p.sy.Flush()
}

// barrierAsync starts a barrier over everything written so far and returns
// its result channel: the audit log is synced, and the files and folders
// the syncer holds now (later writes belong to the next barrier).
func (e *Engine) barrierAsync(p *pass) <-chan error {
	set := p.sy.Take()
	ch := make(chan error, 1)
	go func() {
		err := e.audit.Sync()
		if err == nil {
			err = set.Sync()
		}
		ch <- err
	}()
	return ch
}

// joinTail waits for the previous group's end and returns its error.
func (p *pass) joinTail() error {
	if p.tail == nil {
		return nil
	}
	err := <-p.tail
	p.tail = nil
	return err
}

// DeferFinish queues finish for a draft whose promotion commit is in the
// open group, or whose adopted commit's files the group checks out; it
// reports whether it did. The decision is then recorded only once the
// group's work tree and index are written: recorded before (as the
// adoption path did), a gate killed in between left the draft decided and
// its files in HEAD and the work tree but not in .git/index, and no later
// gate looked at them again.
func (e *Engine) DeferFinish(d *record.Decision, finish func() error) bool {
	p := e.pass
	if p == nil || d.State != decide.StatePromoted || !d.Decided.IsZero() || !(e.repo.InBatch(d.Commit) || p.adopted[d.ID]) {
		return false
	}
	delete(p.adopted, d.ID)
	p.sums[d.SHA256] = true
	p.deferred = append(p.deferred, func() error {
		if err := finish(); err != nil {
			return err
		}
		p.decided[d] = true
		return nil
	})
	return true
}

// AfterPublish queues f to run once the open group's branch moved and its
// work tree and index are written, with the group's deferred decisions (a
// batch approval records its reviews there: reviewgroup.go).
func (e *Engine) AfterPublish(f func() error) {
	e.pass.deferred = append(e.pass.deferred, f)
}

// DeferCleanup queues the end of finish (receipt, removal of the claim and
// marker) until the decision is durable; it reports whether it did.
func (e *Engine) DeferCleanup(f func() error) bool {
	if e.pass == nil {
		return false
	}
	e.pass.cleanups = append(e.pass.cleanups, f)
	return true
}

// Flush publishes the open group: barrier, pack, ref, work tree and
// index, decisions, barrier, cleanups. Two waits on the disk overlap other
// work (issue 9): the first barrier runs while the group's pack is encoded
// and written (the pack is unreferenced until the branch moves, which waits
// for the barrier); the second barrier and the cleanups after it (receipts,
// removal of claims) run in the background while the gate decides the next
// group, and are joined before the next group's end starts and at EndPass.
// The order each draft's files reach the disk is the same as before:
// claim and marker, branch, decision, then receipt and removal of the claim.
func (e *Engine) Flush() (err error) {
	p := e.pass
	if p == nil {
		return nil
	}
	// Decisions recorded in the background (asyncrecord.go) are covered
	// by this flush's barriers.
	if rerr := e.DrainRecords(); rerr != nil {
		defer func() { err = errors.Join(rerr, err) }()
	}
	p.drafts = 0
	marker, err := e.writeGroupMarker(p)
	if err != nil {
		return err
	}
	// The files the flush will check out, journaled before the branch
	// moves (the first barrier syncs it): a gate killed between the move
	// and the index write redoes the checkout when it opens
	// (checkoutjournal.go).
	if err := e.journalCheckout(); err != nil {
		return err
	}
	e.fault("marked")
	first := e.barrierAsync(p)
	published, err := e.repo.PublishBatch(func() error {
		err := <-first
		first = nil
		if err == nil {
			e.fault("intents")
		}
		return err
	})
	if first != nil {
		err = errors.Join(err, <-first) // the group had no commit
		if err == nil {
			e.fault("intents")
		}
	}
	if err != nil {
		// Nothing was decided for the group's promotions: their claims
		// stay, the next pass promotes them again (or adopts a commit).
		p.deferred, p.sums, p.adopted = nil, map[string]bool{}, map[string]bool{}
		terr := p.joinTail()
		cerr := e.barrier(p)
		if cerr == nil {
			cerr = e.runCleanups(p)
		}
		return errors.Join(fmt.Errorf("group commit: %w", err), terr, cerr)
	}
	e.checkoutDone()
	if published {
		e.fault("published")
	}
	var errs []error
	for _, f := range p.deferred {
		if err := f(); err != nil {
			errs = append(errs, err)
		}
	}
	recorded := len(errs) == 0
	p.deferred, p.sums, p.adopted = nil, map[string]bool{}, map[string]bool{}
	e.fault("recorded")
	// One group's end at a time: receipts keep their order, and an error
	// is reported by the flush that follows it (or by EndPass).
	errs = append(errs, p.joinTail())
	second := e.barrierAsync(p)
	cleanups := p.cleanups
	p.cleanups = nil
	p.tail = make(chan error, 1)
	go func(tail chan<- error) {
		if err := <-second; err != nil {
			// The decisions may not be durable: the claims stay, and a
			// later pass finishes them from the recorded decisions.
			tail <- err
			return
		}
		e.fault("synced")
		err := runAll(cleanups)
		e.fault("cleaned")
		if err == nil && recorded && marker != "" {
			// Every draft of the group has a durable decision and no claim.
			err = os.Remove(marker)
		}
		tail <- err
	}(p.tail)
	return errors.Join(errs...)
}

// runCleanups runs the queued ends of finish in parallel: they touch
// different files (a receipt, a claim, a marker per draft), and unlinks
// wait on the filesystem's journal more than on the CPU.
func (e *Engine) runCleanups(p *pass) error {
	fs := p.cleanups
	p.cleanups = nil
	return runAll(fs)
}

// runAll runs fs on a few goroutines and joins their errors.
func runAll(fs []func() error) error {
	ch := make(chan func() error)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for i := 0; i < min(16, len(fs)); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for f := range ch {
				if err := f(); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, f := range fs {
		ch <- f
	}
	close(ch)
	wg.Wait()
	return errors.Join(errs...)
}

// GroupMarker is the committing/ marker of one group: the drafts whose
// commits the group holds and the branch's on-disk tip it was built on (the
// recovery walk's end). It is written and synced before the branch moves,
// and removed once every draft of the group has a durable decision and no
// claim; a marker left by a gate killed in between is read by
// AdoptEarlierCommit, and dropped by openClaims once none of its drafts is
// still claimed.
type GroupMarker struct {
	Base string   `json:"base"`
	IDs  []string `json:"ids"`
}

const GroupMarkerPrefix = "G-"

// markInGroup notes that draft id is promoted in the open group, whose
// marker covers it; false outside a group (the caller writes its own).
func (e *Engine) markInGroup(id string) bool {
	p := e.pass
	if p == nil || !e.repo.Batching() {
		return false
	}
	p.marked = append(p.marked, id)
	return true
}

// writeGroupMarker writes the open group's marker (synced by the barrier
// that precedes the branch move) and returns its path ("" when the group
// promotes nothing).
func (e *Engine) writeGroupMarker(p *pass) (string, error) {
	if len(p.marked) == 0 || !e.repo.Batching() {
		p.marked = nil
		return "", nil
	}
	m := GroupMarker{Base: e.repo.BatchBase().String(), IDs: p.marked}
	p.marked = nil
	path := e.statePath(Dir, GroupMarkerPrefix+e.host.NewID()+".json")
	if err := durable.WriteJSON(path, m); err != nil {
		return "", fmt.Errorf("group marker: %w", err)
	}
	if e.groups == nil {
		e.groups = map[string]repo.Hash{}
	}
	for _, id := range m.IDs {
		e.groups[id] = repo.NewHash(m.Base)
	}
	return path, nil
}

// LoadGroupMarkers reads every group marker: the base of each draft they
// name. Markers none of whose drafts is claimed any more (claimed reports
// it) are removed. claimed nil keeps them all.
func (e *Engine) LoadGroupMarkers(claimed func(id string) bool) error {
	ents, err := os.ReadDir(e.statePath(Dir))
	if err != nil {
		return err
	}
	groups := map[string]repo.Hash{}
	for _, ent := range ents {
		if !strings.HasPrefix(ent.Name(), GroupMarkerPrefix) || !strings.HasSuffix(ent.Name(), ".json") {
			continue
		}
		var m GroupMarker
		if err := durable.ReadJSON(e.statePath(Dir, ent.Name()), &m); err != nil {
			return fmt.Errorf("group marker: %w", err)
		}
		live := claimed == nil
		for _, id := range m.IDs {
			groups[id] = repo.NewHash(m.Base)
			live = live || claimed(id)
		}
		if !live {
			os.Remove(e.statePath(Dir, ent.Name()))
		}
	}
	e.groups = groups
	return nil
}

// groupBase returns the base a group marker records for draft id.
func (e *Engine) groupBase(id string) (repo.Hash, bool, error) {
	if e.groups == nil {
		if err := e.LoadGroupMarkers(nil); err != nil {
			return repo.ZeroHash, false, err
		}
	}
	h, ok := e.groups[id]
	return h, ok, nil
}
