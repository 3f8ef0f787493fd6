// Package ledger is the gate's record of its decisions in the state
// directory: decisions/ID.json (authoritative), seen/SHA256.json (the first
// decision taken on a content), pending/ID.draft (the bytes of a draft held
// for review; ID.rejected once a reviewer rejected it), the ids a reviewer
// types (Resolve), the versions of a resubmitted draft (PreviousVersion)
// and the index of held duplicates (AddDup, TakeDups). It knows nothing of
// claims, commits or the inbox.
package ledger

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/fedmem/fedmem/gate/durable"
	"github.com/fedmem/fedmem/gate/record"
)

// The ledger's folders in the state directory.
const (
	DecisionsDir = "decisions"
	PendingDir   = "pending"
	SeenDir      = "seen"
)

// ErrNotPending is returned when a review names a draft that is not held.
var ErrNotPending = errors.New("no pending draft with that id")

// Ledger is the decision record of one state directory.
type Ledger struct {
	state string
	// dups indexes held duplicates by original (dupindex.go).
	dups dupIndex
}

// New returns the ledger of state directory state.
func New(state string) *Ledger { return &Ledger{state: state} }

func (l *Ledger) statePath(parts ...string) string {
	return filepath.Join(append([]string{l.state}, parts...)...)
}

// Seen is what LoadSeen reads from seen/SHA256.json: a decision (the file
// is a hard link to decisions/ID.json, LinkSeen) or the {id, state} record
// a review writes.
type Seen struct {
	ID    string `json:"id"`
	State string `json:"state"`
}

// NewID is a claim's (and so its decision's) id: the UTC time and a
// random tail.
func NewID(now time.Time) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102T150405.000000000Z") + "-" + hex.EncodeToString(b[:])
}

// ValidID reports whether id has the shape of a claim id (safe as a file
// name in the state directory).
func ValidID(id string) bool {
	if len(id) < 20 || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '.' || r == '-') {
			return false
		}
	}
	return true
}

// Load returns the recorded decision for a claim id, or nil.
func (l *Ledger) Load(id string) (*record.Decision, error) {
	var d record.Decision
	err := durable.ReadJSON(l.statePath(DecisionsDir, id+".json"), &d)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// LinkSeen records d as the first decision taken on its content: a hard
// link seen/SHA256.json to its decision file (no new inode, nothing more
// to fsync than the folder). A record already there is kept: it is the
// first (or d's own, when a crashed gate linked it already).
func (l *Ledger) LinkSeen(d *record.Decision) error {
	dst := l.statePath(SeenDir, d.SHA256+".json")
	err := os.Link(l.statePath(DecisionsDir, d.ID+".json"), dst)
	switch {
	case errors.Is(err, os.ErrExist):
		return nil
	case err != nil:
		// A filesystem without hard links: the record itself.
		return durable.WriteJSON(dst, Seen{ID: d.ID, State: d.State})
	}
	if lz := durable.LazyFor(dst); lz != nil {
		lz.AddDir(filepath.Dir(dst))
		return nil
	}
	return durable.SyncDir(filepath.Dir(dst))
}

// LoadSeen returns the first decision recorded on content sum, or nil.
func (l *Ledger) LoadSeen(sum string) (*Seen, error) {
	var s Seen
	err := durable.ReadJSON(l.statePath(SeenDir, sum+".json"), &s)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// All lists every recorded decision, oldest first.
func (l *Ledger) All() ([]record.Decision, error) {
	ents, err := os.ReadDir(l.statePath(DecisionsDir))
	if err != nil {
		return nil, err
	}
	var out []record.Decision
	for _, e := range ents {
		var d record.Decision
		if filepath.Ext(e.Name()) != ".json" {
			continue
		}
		if err := durable.ReadJSON(l.statePath(DecisionsDir, e.Name()), &d); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}
