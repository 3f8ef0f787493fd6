package gate

import (
	"errors"

	"fmt"
	"os"
	"strings"

	"github.com/fedmem/fedmem/gate/audit"
	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/durable"
	"github.com/fedmem/fedmem/gate/ledger"
	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/gate/review"
	"github.com/fedmem/fedmem/gate/sign"
	"github.com/fedmem/fedmem/gate/validate"
	"github.com/fedmem/fedmem/vault/note"
)

// ErrNotPending is returned when a review names a draft that is not held.
var ErrNotPending = ledger.ErrNotPending

// MinIDPrefix is the shortest id prefix a reviewer may type.
const MinIDPrefix = ledger.MinIDPrefix

// ErrAmbiguousID is returned when a prefix names more than one decision.
var ErrAmbiguousID = ledger.ErrAmbiguousID

// Pending lists drafts held for review, oldest first.
func (g *Gate) Pending() ([]Decision, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	defer g.refreshView() // HEAD may have moved: the sandbox's view follows (viewhost.go)
	all, err := g.Decisions()
	if err != nil {
		return nil, err
	}
	var out []Decision
	byID := map[string]*Decision{}
	for i := range all {
		byID[all[i].ID] = &all[i]
	}
	var orphans []*Decision
	for _, d := range all {
		switch {
		case d.State == StatePending && d.DuplicateOf == "":
			out = append(out, d)
		case d.State == StatePending:
			// A duplicate whose original was decided by a review that a
			// crash cut before it settled the duplicates: settle it now.
			if o := byID[d.DuplicateOf]; o == nil || o.State != StatePending {
				orphans = append(orphans, o)
			}
		}
	}
	if len(orphans) > 0 {
		if in, err := g.openInbox(); err == nil {
			for _, o := range orphans {
				if o != nil {
					if err := g.settleDuplicates(in, o, all); err != nil {
						g.log.Warn("duplicates not settled", "id", o.ID, "err", err)
					}
				}
			}
			in.Close()
		}
	}
	return out, nil
}

// settleDuplicates gives each draft recorded as a duplicate of orig (the
// same bytes from another session, kept pending while orig waited) the
// decision a reviewer gave orig: promoted at orig's path and commit, or
// rejected with the reviewer's reason. Each is recorded with its own audit
// entry and receipt, so no duplicate stays pending once orig is decided.
// all is every recorded decision (nil: loaded here).
func (g *Gate) settleDuplicates(in *inbox, orig *Decision, all []Decision) error {
	if orig.State == StatePending || orig.DuplicateOf != "" {
		return nil
	}
	if all == nil {
		// The index of held duplicates, not every decision (a batch of
		// reviews was quadratic in the decisions: gate/ledger/dupindex.go).
		ids, err := g.ledger.TakeDups(orig.ID)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if d, err := g.ledger.Load(id); err == nil && d != nil {
				all = append(all, *d)
			}
		}
	}
	var errs []error
	for _, d := range all {
		if d.State != StatePending || d.DuplicateOf != orig.ID {
			continue
		}
		d.State, d.Path, d.Commit = orig.State, orig.Path, orig.Commit
		d.Reviewer, d.Reviewed, d.ReviewReason = orig.Reviewer, orig.Reviewed, orig.ReviewReason
		if d.Reviewed.IsZero() {
			d.Reviewed = g.now().UTC()
		}
		f := note.Finding{Rule: "duplicate", Severity: note.Info,
			Message: fmt.Sprintf("identical content (decision %s) was %s by %s", orig.ID, orig.State, orig.Reviewer)}
		if orig.State == StateRejected {
			f.Severity = note.Error
			f.Message += ": " + orig.ReviewReason
		}
		d.Reasons = append(d.Reasons, f)
		if err := g.recordReview(in, &d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Show returns a decision, named by its id or a unique prefix of it
// (gate/ledger/reviewid.go), and, for a pending one, the draft bytes.
func (g *Gate) Show(id string) (*Decision, []byte, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	defer g.refreshView() // HEAD may have moved: the sandbox's view follows (viewhost.go)
	id, err := g.ledger.Resolve(id, false)
	if err != nil {
		return nil, nil, err
	}
	d, err := g.ledger.Load(id)
	if err != nil || d == nil {
		return nil, nil, fmt.Errorf("%q: %w", id, ErrNotPending)
	}
	b, _ := os.ReadFile(g.statePath(pendingDir, id+".draft"))
	return d, b, nil
}

func validReviewer(name string) bool {
	return name != "" && len(name) <= 64 && decide.CleanSlug(name) != "" && !strings.ContainsAny(name, " \t\r\n:<>/")
}

// Approve promotes a pending draft on a human's word, through the same
// promotion path as auto-promotion (commit.Engine.Promote): the note records
// `verified: human:<reviewer>`, the commit a Fedmem-Reviewer trailer. The
// draft is validated and judged again (policy or scanner may have changed):
// a draft that is now invalid cannot be approved; flags that held it are
// what the reviewer looked at. A superseded note in force gets status
// deprecated and superseded_by in the same commit. After a crash, an
// approval of a draft already committed adopts that commit (keyed by the
// draft id), whoever approves.
func (g *Gate) Approve(id, reviewer string) (*Decision, error) {
	return g.ApproveWith(id, reviewer, review.ApproveOptions{})
}

// ApproveWith is Approve with the reviewer's decision about a draft that
// contradicts a note in force (decide/conflicts.go, approvechoice.go): without a
// choice such an approval fails with ErrContradiction, naming the note.
func (g *Gate) ApproveWith(id, reviewer string, opts review.ApproveOptions) (*Decision, error) {
	if !validReviewer(reviewer) {
		return nil, fmt.Errorf("reviewer name %q is not usable", reviewer)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	defer g.refreshView() // HEAD may have moved: the sandbox's view follows (viewhost.go)
	pol, err := g.Policy()
	if err != nil {
		return nil, err
	}
	in, err := g.openInbox()
	if err != nil {
		return nil, err
	}
	defer in.Close()
	d, err := g.approveLocked(in, pol, id, reviewer, approval{ApproveOptions: opts})
	if err != nil {
		return nil, err
	}
	return d, g.recordReview(in, d)
}

// approveLocked is an approval up to its commit: the draft re-validated
// and re-judged, the reviewer's choice applied, and promoted (or an
// earlier commit of it adopted); the decision is not recorded (the caller
// records it: at once for a single approval, after the group's branch
// moved for a batch, reviewgroup.go). Call with g.mu held.
func (g *Gate) approveLocked(in *inbox, pol *policy.Policy, id, reviewer string, opts approval) (*Decision, error) {
	d, b, err := g.pendingDraft(id)
	if err != nil {
		return nil, err
	}
	res, err := validate.DraftNamed(d.Draft, b)
	if err != nil {
		return nil, err
	}
	d.Reviewer = reviewer
	// Already committed by an approval (or pass) killed before recording
	// it: adopt that commit, whoever approves now (keyed by draft id).
	if _, head, err := g.repo.Head(); err != nil {
		return nil, err
	} else if done, err := g.commits.AdoptEarlierCommit(head, d); err != nil {
		return nil, err
	} else if done {
		d.Reviewed = g.now().UTC()
		return d, nil
	}
	if res, err = g.applyChoice(d, res, opts.ApproveOptions); err != nil {
		return nil, err
	}
	v, o, err := g.judgeOwned(in, pol, d.Session, d.Draft, res, d.Owner)
	if err != nil {
		return nil, err
	}
	if v.State == StateRejected {
		return nil, fmt.Errorf("draft %s is no longer valid and cannot be approved: %v", d.ID, v.Reasons)
	}
	// Never two notes in force for one name: the reviewer supersedes,
	// retitles or rejects (approvechoice.go).
	if res, err = g.decideContradiction(d, res, &v, opts.ApproveOptions); err != nil {
		return nil, err
	}
	if opts.batch && len(res.Meta.Supersedes) > 0 {
		var ps []string
		for _, r := range res.Meta.Supersedes {
			ps = append(ps, decide.ClipText(r.Value))
		}
		return nil, fmt.Errorf("draft %s would supersede %s: a batch retires no note it did not show; approve it alone (fedmem review show %s, then fedmem review approve %s)", d.ID, strings.Join(ps, ", "), d.ID, d.ID)
	}
	d.Reviewer = reviewer
	if err := g.commits.Promote(pol, d, res, v, o, reviewer); err != nil {
		return nil, err
	}
	d.State, d.Reviewed = StatePromoted, g.now().UTC()
	return d, nil
}

// RejectPending rejects a pending draft with a reviewer's reason. The content
// is remembered: resubmitting it is rejected again.
func (g *Gate) RejectPending(id, reviewer, reason string) (*Decision, error) {
	if !validReviewer(reviewer) {
		return nil, fmt.Errorf("reviewer name %q is not usable", reviewer)
	}
	if strings.TrimSpace(reason) == "" {
		return nil, errors.New("a rejection needs a reason")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	defer g.refreshView() // HEAD may have moved: the sandbox's view follows (viewhost.go)
	d, _, err := g.pendingDraft(id)
	if err != nil {
		return nil, err
	}
	in, err := g.openInbox()
	if err != nil {
		return nil, err
	}
	defer in.Close()
	if len(reason) > 1000 {
		reason = reason[:1000]
	}
	d.State = StateRejected
	d.Reviewer, d.Reviewed, d.ReviewReason = reviewer, g.now().UTC(), reason
	d.Reasons = append(d.Reasons, note.Finding{Rule: "reviewer", Severity: note.Error, Message: "rejected by " + reviewer + ": " + reason})
	return d, g.recordReview(in, d)
}

// pendingDraft loads a held draft named by its id or a unique prefix of it
// (gate/ledger/reviewid.go).
func (g *Gate) pendingDraft(id string) (*Decision, []byte, error) {
	id, err := g.ledger.Resolve(id, true)
	if err != nil {
		return nil, nil, err
	}
	d, err := g.ledger.Load(id)
	if err != nil {
		return nil, nil, err
	}
	if d == nil || d.State != StatePending || d.DuplicateOf != "" {
		return nil, nil, fmt.Errorf("%s: %w", id, ErrNotPending)
	}
	b, err := os.ReadFile(g.statePath(pendingDir, id+".draft"))
	if err != nil {
		return nil, nil, fmt.Errorf("%s: pending bytes: %w", id, err)
	}
	return d, b, nil
}

// recordReview stores a reviewed decision (decision, seen index, audit,
// receipt) and drops the pending copy.
func (g *Gate) recordReview(in *inbox, d *Decision) error {
	if err := g.recordReviewDecision(d); err != nil {
		return err
	}
	g.endReview(in, d)
	// Drafts held as duplicates of this one get the same decision.
	return g.settleDuplicates(in, d, nil)
}

// recordReviewDecision is the durable half of recordReview: the decision,
// the seen index and the audit entry.
func (g *Gate) recordReviewDecision(d *Decision) error {
	if err := durable.WriteJSON(g.statePath(decisionsDir, d.ID+".json"), d); err != nil {
		return err
	}
	if d.SHA256 != "" && d.DuplicateOf == "" {
		if err := durable.WriteJSON(g.statePath(seenDir, d.SHA256+".json"), seenRecord{ID: d.ID, State: d.State}); err != nil {
			return err
		}
	}
	_, err := g.audit.Append("review", map[string]string{"id": d.ID, "state": d.State, "reviewer": d.Reviewer, "reason": d.ReviewReason, "commit": d.Commit})
	return err
}

// endReview is what follows a durable review decision: the receipt, and
// the removal of the pending copy and of the draft's committing marker.
func (g *Gate) endReview(in *inbox, d *Decision) {
	name := d.Draft
	if d.DraftRaw != nil {
		name = string(d.DraftRaw)
	}
	if err := g.writeReceipt(in, d.Session, name, receiptJSON(d)); err != nil {
		g.note("receipt-failed", map[string]string{"id": d.ID, "error": err.Error()})
	}
	g.ledger.DropPending(d) // a reviewer's rejection keeps the bytes (gate/ledger/reviewversion.go)
	os.Remove(g.statePath(committingDir, d.ID))
}

// VerifyAudit checks the gate's audit log and its anchors in the vault's
// history (what `fedmem audit verify --vault` does with read access).
func (g *Gate) VerifyAudit() *review.AuditResult {
	r := &review.AuditResult{}
	hist, err := sign.ReadHistory(g.vaultDir, nil)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.History, r.Anchors = hist, len(hist.Anchors)
	n, probs, err := audit.VerifyAnchored(g.StateDir(), hist.Anchors)
	r.Entries, r.Problems = n, probs
	if err != nil {
		r.Error = err.Error()
	}
	return r
}
