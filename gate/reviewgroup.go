package gate

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/fedmem/fedmem/gate/commit"
	"github.com/fedmem/fedmem/gate/durable"
	"github.com/fedmem/fedmem/gate/ledger"
	"github.com/fedmem/fedmem/gate/review"
)

// Batch approvals on the pass's group commit (issue 19). A batch approval
// used to be N single approvals, each with its own commit objects, ref
// update, index write and some twenty fsyncs: 400 drafts cost 2.2× what
// 400 separate `approve ID` commands did on the 100k-note vault. Now the
// drafts of a batch (up to reviewGroupMax at a time) are approved under one
// hold of the gate lock inside one group of the group commit
// (commit/groupcommit.go), exactly as a pass promotes claims:
//
//   - each draft is validated, judged and committed in memory through the
//     same approveLocked → commit.Engine.Promote a single approval uses, one commit
//     per draft chained on the previous one, each with its own
//     Fedmem-Draft, Fedmem-Reviewer and Fedmem-Audit-Head trailers and its
//     own "commit" audit entry (git log and audit verify stay per draft);
//   - a marker per draft, committing/ID, names the group's base (the
//     branch's on-disk tip) beside the group's committing/G-… marker;
//   - the flush: barrier (markers and audit durable), one pack, one
//     compare-and-swap of the branch, one work-tree and index update; then
//     each draft's review decision and audit entry; a barrier; then the
//     receipts, the removal of the pending copies and markers, and the
//     duplicates' settling.
//
// Crash safety of held drafts (a kill -9 anywhere; TestReviewGroupKillNine):
//
//   - before the branch moves, every draft of the group is still held
//     (decision pending, pending copy in place) and its commit is in an
//     unreferenced pack: nothing is decided. On restart recoverReviewGroups
//     finds no commit between HEAD and the base, drops the per-draft
//     markers, and the drafts wait for a reviewer again;
//   - after the branch moves and before the decisions are durable, each
//     draft's commit is found by its Fedmem-Draft trailer between HEAD and
//     the base; recoverReviewGroups (Open) adopts it — its reviewer taken
//     from the commit's Fedmem-Reviewer trailer — brings the files it
//     changed to HEAD in the work tree and index, and records the review.
//     A later approval of such a draft adopts the commit the same way
//     (the per-draft marker outlives the group's, which a pass drops);
//   - after the decisions are durable, recovery only finishes what
//     followed them (receipt, pending copy, duplicates).
//
// So no approval is lost once its commit is on the branch, and none is
// committed twice.

// reviewGroupMax bounds the drafts one group of a batch approval holds the
// gate lock for (intake waits meanwhile); a larger batch is several groups.
var reviewGroupMax = 500

// ApproveAll approves ids in groups on the group commit (one pack, one
// branch update, one index write and a few fsync barriers per group). A
// draft that fails — decided meanwhile by another reviewer, no longer
// valid, or one that would supersede a note (declared in the draft or by
// opt.Supersede: the listing names no note an approval retires) — is
// reported and the batch goes on: nothing is decided twice, and nothing is
// skipped silently.
func (g *Gate) ApproveAll(ids []string, reviewer string, opts review.ApproveOptions) []review.BatchItem {
	opt := approval{ApproveOptions: opts, batch: true}
	out := make([]review.BatchItem, 0, len(ids))
	for len(ids) > 0 {
		n := min(len(ids), reviewGroupMax)
		out = append(out, g.approveGroup(ids[:n], reviewer, opt)...)
		ids = ids[n:]
	}
	return out
}

// approveGroup approves ids in one group commit.
func (g *Gate) approveGroup(ids []string, reviewer string, opt approval) []review.BatchItem {
	items := make([]review.BatchItem, len(ids))
	for i, id := range ids {
		items[i].ID = id
	}
	fail := func(err error) []review.BatchItem {
		for i := range items {
			if items[i].Decision == nil && items[i].Error == "" {
				items[i].Error = err.Error()
			}
		}
		return items
	}
	if !validReviewer(reviewer) {
		return fail(fmt.Errorf("reviewer name %q is not usable", reviewer))
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	defer g.refreshView() // HEAD may have moved: the sandbox's view follows (viewhost.go)
	if g.commits.InPass() {
		return fail(errors.New("a group commit is open"))
	}
	pol, err := g.Policy()
	if err != nil {
		return fail(err)
	}
	in, err := g.openInbox()
	if err != nil {
		return fail(err)
	}
	defer in.Close()
	t0 := time.Now()
	g.commits.BeginPass()
	staged := make([]*Decision, len(ids))
	recorded := make([]bool, len(ids))
	for i, id := range ids {
		tip0 := g.repo.BatchTip()
		d, err := g.approveLocked(in, pol, id, reviewer, opt)
		if g.repo.Batching() && g.repo.BatchTip() != tip0 {
			// The draft has a commit in the group (even when its approval
			// failed after it: an audit append, say). Its marker is synced
			// by the barrier before the branch moves; without it the
			// group's marker (removed once the group is recorded, dropped
			// by a pass: its drafts are not claims) would be the only
			// pointer to the commit, and a later approval would commit the
			// draft again instead of adopting this commit.
			mid := id
			if d != nil {
				mid = d.ID
			}
			if ledger.ValidID(mid) {
				if err := durable.WriteAtomic(g.statePath(committingDir, mid), []byte(g.repo.BatchBase().String()), 0o600); err != nil {
					g.log.Warn("approval marker not written (the group's marker covers it)", "id", mid, "err", err)
				}
			}
		}
		if err != nil {
			items[i].Error = err.Error()
			continue
		}
		staged[i] = d
		g.commits.AfterPublish(func() error {
			if err := g.recordReviewDecision(d); err != nil {
				return fmt.Errorf("%s: record: %w", d.ID, err)
			}
			recorded[i] = true
			return nil
		})
		groupFault("review-staged")
	}
	// After the decisions: one cleanup for the group, in order (receipts,
	// pending copies, markers, the duplicates' decisions), run once the
	// decisions are durable.
	g.commits.AfterPublish(func() error {
		var done []*Decision
		for i, d := range staged {
			if d != nil && recorded[i] {
				done = append(done, d)
			}
		}
		if len(done) > 0 {
			g.commits.DeferCleanup(func() error {
				var errs []error
				for _, d := range done {
					g.endReview(in, d)
					if err := g.settleDuplicates(in, d, nil); err != nil {
						errs = append(errs, err)
					}
				}
				return errors.Join(errs...)
			})
		}
		return nil
	})
	t1 := time.Now()
	perr := g.commits.EndPass()
	g.log.Info("batch approval group", "drafts", len(ids), "approve_ms", t1.Sub(t0).Milliseconds(), "publish_ms", time.Since(t1).Milliseconds())
	if perr != nil {
		g.log.Warn("batch approval group", "err", perr)
	}
	for i, d := range staged {
		switch {
		case d == nil:
		case recorded[i]:
			items[i].Decision = d
		case perr != nil:
			items[i].Error = fmt.Sprintf("not decided (the group commit failed: %v); it is still held", perr)
		default:
			items[i].Error = "not decided; it is still held"
		}
	}
	return items
}

// recoverReviewGroups finishes the batch approvals a killed gate left (see
// the top of this file): for each draft a group marker names that is not a
// claim, a held draft whose commit is on the branch is adopted and its
// review recorded; one whose commit never reached the branch stays held
// (its marker is dropped); a decided one whose pending copy is still there
// gets its receipt and cleanup. Called by Open, holding the state lock.
func (g *Gate) recoverReviewGroups() error {
	ents, err := os.ReadDir(g.statePath(committingDir))
	if err != nil {
		return err
	}
	var ids []string
	seen := map[string]bool{}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), commit.GroupMarkerPrefix) || !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		var m commit.GroupMarker
		if err := durable.ReadJSON(g.statePath(committingDir, e.Name()), &m); err != nil {
			return fmt.Errorf("group marker %s: %w", e.Name(), err)
		}
		for _, id := range m.IDs {
			if seen[id] || !ledger.ValidID(id) {
				continue
			}
			seen[id] = true
			if exists(g.statePath(claimsDir, id+".draft")) || exists(g.statePath(claimsDir, id+".json")) {
				continue // a pass's claim: the next pass finishes it
			}
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	in, err := g.openInbox()
	if err != nil {
		return err
	}
	defer in.Close()
	_, head, err := g.repo.Head()
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range ids {
		d, err := g.ledger.Load(id)
		if err != nil || d == nil {
			errs = append(errs, err)
			continue
		}
		switch {
		case d.State == StatePending && d.DuplicateOf == "":
			done, err := g.commits.AdoptEarlierCommit(head, d)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", id, err))
				continue
			}
			if !done {
				// Its group never reached the branch: still held.
				os.Remove(g.statePath(committingDir, id))
				continue
			}
			d.Reviewed = g.now().UTC()
			g.log.Info("batch approval recovered", "id", id, "commit", d.Commit, "reviewer", d.Reviewer)
			errs = append(errs, g.recordReview(in, d))
		case d.State != StatePending && exists(g.statePath(pendingDir, id+".draft")):
			g.endReview(in, d)
			errs = append(errs, g.settleDuplicates(in, d, nil))
		}
	}
	return errors.Join(errs...)
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
