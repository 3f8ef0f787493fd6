// Package record holds the gate's record of one draft's outcome, the
// Decision: what decisions/ID.json holds, what review lists and what a
// receipt is made from. It is plain data; nothing here touches the system.
package record

import (
	"time"

	"github.com/fedmem/fedmem/gate/origin"
	"github.com/fedmem/fedmem/vault/note"
)

// Decision is the recorded outcome for one claim. Fields are only ever added.
type Decision struct {
	ID          string         `json:"id"`
	Session     string         `json:"session"`
	Draft       string         `json:"draft"`
	DraftRaw    []byte         `json:"draft_raw,omitempty"` // exact inbox name
	SHA256      string         `json:"sha256,omitempty"`
	State       string         `json:"state"`
	Reasons     []note.Finding `json:"reasons,omitempty"`
	Type        string         `json:"type,omitempty"`
	Risk        string         `json:"risk,omitempty"`
	Confidence  string         `json:"confidence,omitempty"`
	Path        string         `json:"path,omitempty"`
	Commit      string         `json:"commit,omitempty"`
	DuplicateOf string         `json:"duplicate_of,omitempty"`
	// DuplicatePrivate: DuplicateOf is a decision of another session that
	// was not promoted; the receipt does not say so (dupes.go).
	DuplicatePrivate bool      `json:"duplicate_private,omitempty"`
	FirstSeen        time.Time `json:"first_seen"`
	Decided          time.Time `json:"decided"`
	// Set when a human decided a pending draft over the review socket.
	Reviewer     string    `json:"reviewer,omitempty"`
	ReviewReason string    `json:"review_reason,omitempty"`
	Reviewed     time.Time `json:"reviewed,omitzero"`
	// Origin is the session's origin as the gate proved it (unverified,
	// verified:<profile>, trusted:<profile>); never the draft's claim.
	Origin string `json:"origin,omitempty"`
	// AutoPromoted is true when the gate promoted the draft without a
	// reviewer (counted against auto_promote's rates).
	AutoPromoted bool `json:"auto_promoted,omitempty"`
	// Owner is the owner and mode of the inode the gate read the draft
	// from (fstat at the read): a draft counts as the session's only when
	// its owner is the session record's uid (Origin.ForDraft).
	Owner *origin.DraftOwner `json:"draft_owner,omitempty"`
}
