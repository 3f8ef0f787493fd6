package gate

import (
	"errors"

	"fmt"
	"os"
	"strings"

	"github.com/fedmem/fedmem/gate/validate"
	"github.com/fedmem/fedmem/vault/note"
)

// ErrNotPending is returned when a review names a draft that is not held.
var ErrNotPending = errors.New("no pending draft with that id")

// Pending lists drafts held for review, oldest first.
func (g *Gate) Pending() ([]Decision, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	all, err := g.Decisions()
	if err != nil {
		return nil, err
	}
	var out []Decision
	for _, d := range all {
		if d.State == StatePending && d.DuplicateOf == "" {
			out = append(out, d)
		}
	}
	return out, nil
}

// Show returns a decision and, for a pending one, the draft bytes.
func (g *Gate) Show(id string) (*Decision, []byte, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !validClaimID(id) {
		return nil, nil, fmt.Errorf("%q: %w", id, ErrNotPending)
	}
	d, err := g.loadDecision(id)
	if err != nil || d == nil {
		return nil, nil, fmt.Errorf("%q: %w", id, ErrNotPending)
	}
	b, _ := os.ReadFile(g.statePath(pendingDir, id+".draft"))
	return d, b, nil
}

func validReviewer(name string) bool {
	return name != "" && len(name) <= 64 && cleanSlug(name) != "" && !strings.ContainsAny(name, " \t\r\n:<>/")
}

// Approve promotes a pending draft on a human's word, through the same
// promotion path as auto-promotion (promoteDraft): the note records
// `verified: human:<reviewer>`, the commit a Fedmem-Reviewer trailer. The
// draft is validated and judged again (policy or scanner may have changed):
// a draft that is now invalid cannot be approved; flags that held it are
// what the reviewer looked at. A superseded note in force gets status
// deprecated and superseded_by in the same commit. After a crash, an
// approval of a draft already committed adopts that commit (keyed by the
// draft id), whoever approves.
func (g *Gate) Approve(id, reviewer string) (*Decision, error) {
	if !validReviewer(reviewer) {
		return nil, fmt.Errorf("reviewer name %q is not usable", reviewer)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	d, b, err := g.pendingDraft(id)
	if err != nil {
		return nil, err
	}
	pol, err := g.Policy()
	if err != nil {
		return nil, err
	}
	res, err := validate.DraftNamed(d.Draft, b)
	if err != nil {
		return nil, err
	}
	in, err := g.openInbox()
	if err != nil {
		return nil, err
	}
	defer in.Close()
	d.Reviewer = reviewer
	// Already committed by an approval (or pass) killed before recording
	// it: adopt that commit, whoever approves now (keyed by draft id).
	if _, head, err := g.repo.head(); err != nil {
		return nil, err
	} else if done, err := g.adoptEarlierCommit(head, d); err != nil {
		return nil, err
	} else if done {
		d.Reviewed = g.now().UTC()
		return d, g.recordReview(in, d)
	}
	v, o, err := g.judgeDraft(in, pol, d.Session, res)
	if err != nil {
		return nil, err
	}
	if v.State == StateRejected {
		return nil, fmt.Errorf("draft %s is no longer valid and cannot be approved: %v", id, v.Reasons)
	}
	d.Reviewer = reviewer
	if err := g.promoteDraft(pol, d, res, v, o, reviewer); err != nil {
		return nil, err
	}
	d.State, d.Reviewed = StatePromoted, g.now().UTC()
	return d, g.recordReview(in, d)
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

func (g *Gate) pendingDraft(id string) (*Decision, []byte, error) {
	if !validClaimID(id) {
		return nil, nil, fmt.Errorf("%q: %w", id, ErrNotPending)
	}
	d, err := g.loadDecision(id)
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
	if err := writeJSON(g.statePath(decisionsDir, d.ID+".json"), d); err != nil {
		return err
	}
	if d.SHA256 != "" {
		if err := writeJSON(g.statePath(seenDir, d.SHA256+".json"), seenRecord{d.ID, d.State}); err != nil {
			return err
		}
	}
	if _, err := g.audit.Append("review", map[string]string{"id": d.ID, "state": d.State, "reviewer": d.Reviewer, "reason": d.ReviewReason, "commit": d.Commit}); err != nil {
		return err
	}
	name := d.Draft
	if d.DraftRaw != nil {
		name = string(d.DraftRaw)
	}
	if err := g.writeReceipt(in, d.Session, name, receiptJSON(d)); err != nil {
		g.note("receipt-failed", map[string]string{"id": d.ID, "error": err.Error()})
	}
	os.Remove(g.statePath(pendingDir, d.ID+".draft"))
	os.Remove(g.statePath(committingDir, d.ID))
	return nil
}

// deprecate marks a note superseded: status deprecated, superseded_by dest.
func deprecate(old []byte, dest string) ([]byte, bool) {
	n, _ := note.Parse(old)
	if n == nil {
		return nil, false
	}
	set := func(k, v string) {
		for i := 0; i+1 < len(n.Front.Content); i += 2 {
			if n.Front.Content[i].Value == k {
				n.Front.Content[i+1] = str(v)
				return
			}
		}
		n.Front.Content = append(n.Front.Content, str(k), str(v))
	}
	set("status", note.StatusDeprecated)
	set("superseded_by", dest)
	b, err := note.Render(n.Front, n.Body)
	return b, err == nil
}

// SocketName is the review socket's name in the state directory.
const SocketName = "review.sock"

// ReviewRequest is one request on the review socket (one per connection).
type ReviewRequest struct {
	Op     string `json:"op"` // list | show | approve | reject
	ID     string `json:"id,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// ReviewResponse answers a ReviewRequest. Fields are only ever added.
type ReviewResponse struct {
	OK        bool            `json:"ok"`
	Error     string          `json:"error,omitempty"`
	Reviewer  string          `json:"reviewer,omitempty"`
	Decisions []Decision      `json:"decisions,omitempty"`
	Decision  *Decision       `json:"decision,omitempty"`
	Draft     string          `json:"draft,omitempty"`
	Reverify  *ReverifyResult `json:"reverify,omitempty"` // op reverify (sweep.go)
}
