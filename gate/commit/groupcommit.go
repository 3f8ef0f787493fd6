package gate

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/fedmem/fedmem/gate/durable"
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
// the marker's base (adoptEarlierCommit). A claim is only removed after its
// decision is durable.

// groupFault is a test hook called at named points of a flush (a test's
// helper process kills itself there); it does nothing in the binary.
var groupFault = func(point string) {}

// Flush a group after this many drafts, or when its oldest undecided draft
// has waited this long, whichever comes first (latency under a burst).
// Variables so that a crash test can make small groups.
var (
	groupMaxDrafts = 128
	groupMaxWait   = 250 * time.Millisecond
)

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
	decided map[*Decision]bool
	// marked are the drafts promoted in the open group; their marker is
	// written once for the group, at its flush (groupMarker).
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

// beginPass starts group mode for a pass. Only Once uses it; reviews and
// sweeps keep writing (and syncing) as they go.
func (g *Gate) beginPass() {
	p := &pass{sy: durable.NewSyncer(), sums: map[string]bool{}, decided: map[*Decision]bool{}, adopted: map[string]bool{}}
	p.roots = []string{g.state, g.vaultDir}
	durable.Defer(p.roots, p.sy)
	g.audit.SetDeferSync(true)
	g.pass = p
	g.repo.BeginBatch()
}

// endPass flushes what is left and leaves group mode.
func (g *Gate) endPass() error {
	if g.pass == nil {
		return nil
	}
	err := g.flushPass()
	p := g.pass
	err = errors.Join(err, p.joinTail())
	g.pass = nil
	g.repo.AbortBatch()
	durable.Undefer(p.roots, p.sy)
	g.audit.SetDeferSync(false)
	return errors.Join(err, g.barrier(p))
}

// passDue reports whether the open group should be flushed now.
func (g *Gate) passDue() bool {
	p := g.pass
	return p != nil && p.drafts > 0 && (p.drafts >= groupMaxDrafts || time.Since(p.opened) >= groupMaxWait)
}

// passCounted notes one more draft handled in the open group.
func (g *Gate) passCounted() {
	if p := g.pass; p != nil {
		if p.drafts == 0 {
			p.opened = time.Now()
		}
		p.drafts++
	}
}

// pendingSum reports whether content with this hash is promoted in the
// open group and not yet recorded.
func (g *Gate) pendingSum(sum string) bool { return g.pass != nil && g.pass.sums[sum] }

func (g *Gate) barrier(p *pass) error {
	if err := g.audit.Sync(); err != nil {
		return err
	}
	return p.sy.Flush()
}

// barrierAsync starts a barrier over everything written so far and returns
// its result channel: the audit log is synced, and the files and folders
// the syncer holds now (later writes belong to the next barrier).
func (g *Gate) barrierAsync(p *pass) <-chan error {
	set := p.sy.Take()
	ch := make(chan error, 1)
	go func() {
		err := g.audit.Sync()
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

// deferFinish queues finish for a draft whose promotion commit is in the
// open group, or whose adopted commit's files the group checks out; it
// reports whether it did. The decision is then recorded only once the
// group's work tree and index are written: recorded before (as the
// adoption path did), a gate killed in between left the draft decided and
// its files in HEAD and the work tree but not in .git/index, and no later
// gate looked at them again.
func (g *Gate) deferFinish(in *inbox, c Claim, d *Decision) bool {
	p := g.pass
	if p == nil || d.State != StatePromoted || !d.Decided.IsZero() || !(g.repo.InBatch(d.Commit) || p.adopted[d.ID]) {
		return false
	}
	delete(p.adopted, d.ID)
	p.sums[d.SHA256] = true
	p.deferred = append(p.deferred, func() error {
		if err := g.finish(in, c, d, nil); err != nil {
			return err
		}
		p.decided[d] = true
		return nil
	})
	return true
}

// deferCleanup queues the end of finish (receipt, removal of the claim and
// marker) until the decision is durable; it reports whether it did.
func (g *Gate) deferCleanup(f func() error) bool {
	if g.pass == nil {
		return false
	}
	g.pass.cleanups = append(g.pass.cleanups, f)
	return true
}

// flushPass publishes the open group: barrier, pack, ref, work tree and
// index, decisions, barrier, cleanups. Two waits on the disk overlap other
// work (issue 9): the first barrier runs while the group's pack is encoded
// and written (the pack is unreferenced until the branch moves, which waits
// for the barrier); the second barrier and the cleanups after it (receipts,
// removal of claims) run in the background while the gate decides the next
// group, and are joined before the next group's end starts and at endPass.
// The order each draft's files reach the disk is the same as before:
// claim and marker, branch, decision, then receipt and removal of the claim.
func (g *Gate) flushPass() (err error) {
	p := g.pass
	if p == nil {
		return nil
	}
	// Decisions recorded in the background (asyncrecord.go) are covered
	// by this flush's barriers.
	if rerr := g.drainRecords(); rerr != nil {
		defer func() { err = errors.Join(rerr, err) }()
	}
	p.drafts = 0
	marker, err := g.writeGroupMarker(p)
	if err != nil {
		return err
	}
	// The files the flush will check out, journaled before the branch
	// moves (the first barrier syncs it): a gate killed between the move
	// and the index write redoes the checkout when it opens
	// (checkoutjournal.go).
	if err := g.journalCheckout(); err != nil {
		return err
	}
	groupFault("marked")
	first := g.barrierAsync(p)
	published, err := g.repo.PublishBatch(func() error {
		err := <-first
		first = nil
		if err == nil {
			groupFault("intents")
		}
		return err
	})
	if first != nil {
		err = errors.Join(err, <-first) // the group had no commit
		if err == nil {
			groupFault("intents")
		}
	}
	if err != nil {
		// Nothing was decided for the group's promotions: their claims
		// stay, the next pass promotes them again (or adopts a commit).
		p.deferred, p.sums, p.adopted = nil, map[string]bool{}, map[string]bool{}
		terr := p.joinTail()
		cerr := g.barrier(p)
		if cerr == nil {
			cerr = g.runCleanups(p)
		}
		return errors.Join(fmt.Errorf("group commit: %w", err), terr, cerr)
	}
	g.checkoutDone()
	if published {
		groupFault("published")
	}
	var errs []error
	for _, f := range p.deferred {
		if err := f(); err != nil {
			errs = append(errs, err)
		}
	}
	recorded := len(errs) == 0
	p.deferred, p.sums, p.adopted = nil, map[string]bool{}, map[string]bool{}
	groupFault("recorded")
	// One group's end at a time: receipts keep their order, and an error
	// is reported by the flush that follows it (or by endPass).
	errs = append(errs, p.joinTail())
	second := g.barrierAsync(p)
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
		groupFault("synced")
		err := runAll(cleanups)
		groupFault("cleaned")
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
func (g *Gate) runCleanups(p *pass) error {
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

// groupMarker is the committing/ marker of one group: the drafts whose
// commits the group holds and the branch's on-disk tip it was built on (the
// recovery walk's end). It is written and synced before the branch moves,
// and removed once every draft of the group has a durable decision and no
// claim; a marker left by a gate killed in between is read by
// adoptEarlierCommit, and dropped by openClaims once none of its drafts is
// still claimed.
type groupMarker struct {
	Base string   `json:"base"`
	IDs  []string `json:"ids"`
}

const groupMarkerPrefix = "G-"

// markInGroup notes that draft id is promoted in the open group, whose
// marker covers it; false outside a group (the caller writes its own).
func (g *Gate) markInGroup(id string) bool {
	p := g.pass
	if p == nil || !g.repo.Batching() {
		return false
	}
	p.marked = append(p.marked, id)
	return true
}

// writeGroupMarker writes the open group's marker (synced by the barrier
// that precedes the branch move) and returns its path ("" when the group
// promotes nothing).
func (g *Gate) writeGroupMarker(p *pass) (string, error) {
	if len(p.marked) == 0 || !g.repo.Batching() {
		p.marked = nil
		return "", nil
	}
	m := groupMarker{Base: g.repo.BatchBase().String(), IDs: p.marked}
	p.marked = nil
	path := g.statePath(committingDir, groupMarkerPrefix+newClaimID(g.now())+".json")
	if err := durable.WriteJSON(path, m); err != nil {
		return "", fmt.Errorf("group marker: %w", err)
	}
	if g.groups == nil {
		g.groups = map[string]repo.Hash{}
	}
	for _, id := range m.IDs {
		g.groups[id] = repo.NewHash(m.Base)
	}
	return path, nil
}

// loadGroupMarkers reads every group marker: the base of each draft they
// name. Markers none of whose drafts is claimed any more (claimed reports
// it) are removed. claimed nil keeps them all.
func (g *Gate) loadGroupMarkers(claimed func(id string) bool) error {
	ents, err := os.ReadDir(g.statePath(committingDir))
	if err != nil {
		return err
	}
	groups := map[string]repo.Hash{}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), groupMarkerPrefix) || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		var m groupMarker
		if err := durable.ReadJSON(g.statePath(committingDir, e.Name()), &m); err != nil {
			return fmt.Errorf("group marker: %w", err)
		}
		live := claimed == nil
		for _, id := range m.IDs {
			groups[id] = repo.NewHash(m.Base)
			live = live || claimed(id)
		}
		if !live {
			os.Remove(g.statePath(committingDir, e.Name()))
		}
	}
	g.groups = groups
	return nil
}

// groupBase returns the base a group marker records for draft id.
func (g *Gate) groupBase(id string) (repo.Hash, bool, error) {
	if g.groups == nil {
		if err := g.loadGroupMarkers(nil); err != nil {
			return repo.ZeroHash, false, err
		}
	}
	h, ok := g.groups[id]
	return h, ok, nil
}
