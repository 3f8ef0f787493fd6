package gate

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/durable"
	"github.com/fedmem/fedmem/gate/origin"
	"github.com/fedmem/fedmem/gate/record"
)

// Decision states (decide's verdicts).
const (
	StatePromoted = decide.StatePromoted
	StatePending  = decide.StatePending
	StateRejected = decide.StateRejected
)

// State directory layout (all gate-private, mode 0700):
//
//	lock                 flock held by the running gate
//	audit.jsonl, .head   the audit log (package audit)
//	claims/J-*.jsonl     claim journal of a pass: one record per line, each
//	                     appended before its draft is moved (claimjournal.go)
//	claims/ID.json       claim record of an older gate (still read)
//	claims/ID.draft      the draft, moved out of the inbox
//	decisions/ID.json    the decision (authoritative)
//	pending/ID.draft     bytes of a draft held for review
//	seen/SHA256.json     first decision taken on that content (a hard link
//	                     to decisions/ID.json, or an {id, state} record)
const (
	claimsDir    = "claims"
	decisionsDir = "decisions"
	pendingDir   = "pending"
	seenDir      = "seen"
)

// Claim is the gate's record of one inbox entry it took.
type Claim struct {
	ID      string `json:"id"`
	Session string `json:"session"`
	// Name is the entry's name in the inbox, for display (JSON turns
	// invalid UTF-8 into U+FFFD); NameRaw holds its exact bytes.
	Name      string    `json:"name"`
	NameRaw   []byte    `json:"name_raw,omitempty"`
	FirstSeen time.Time `json:"first_seen"`
	// Stat is the entry as lstat(2) saw it in the session folder, before
	// the gate moved it (nil in claims made by older gates).
	Stat *origin.DraftOwner `json:"stat,omitempty"`
	// legacy: the record is a claims/ID.json file (an older gate's), not
	// a line of a claim journal; it is removed with the draft.
	legacy bool
}

// rawName is the entry's exact name in the inbox.
func (c Claim) rawName() string {
	if c.NameRaw != nil {
		return string(c.NameRaw)
	}
	return c.Name
}

// Decision is the recorded outcome for one claim (gate/record).
type Decision = record.Decision

// errReturned: a claimed draft became unreadable (its owner changed its mode
// through a descriptor it kept) and was moved back into the inbox, unread.
var errReturned = errors.New("draft unreadable; returned to the inbox")

// seenRecord is what loadSeen reads from seen/SHA256.json: a decision
// (the file is a hard link to decisions/ID.json, linkSeen) or the {id,
// state} record a review writes.
type seenRecord struct {
	ID    string `json:"id"`
	State string `json:"state"`
}

func newClaimID(now time.Time) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102T150405.000000000Z") + "-" + hex.EncodeToString(b[:])
}

func validClaimID(id string) bool {
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

func (g *Gate) statePath(parts ...string) string {
	return filepath.Join(append([]string{g.state}, parts...)...)
}

// loadDecision returns the recorded decision for a claim id, or nil.
func (g *Gate) loadDecision(id string) (*Decision, error) {
	var d Decision
	err := durable.ReadJSON(g.statePath(decisionsDir, id+".json"), &d)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// linkSeen records d as the first decision taken on its content: a hard
// link seen/SHA256.json to its decision file (no new inode, nothing more
// to fsync than the folder). A record already there is kept: it is the
// first (or d's own, when a crashed gate linked it already).
func (g *Gate) linkSeen(d *Decision) error {
	dst := g.statePath(seenDir, d.SHA256+".json")
	err := os.Link(g.statePath(decisionsDir, d.ID+".json"), dst)
	switch {
	case errors.Is(err, os.ErrExist):
		return nil
	case err != nil:
		// A filesystem without hard links: the record itself.
		return durable.WriteJSON(dst, seenRecord{d.ID, d.State})
	}
	if lz := durable.LazyFor(dst); lz != nil {
		lz.AddDir(filepath.Dir(dst))
		return nil
	}
	return durable.SyncDir(filepath.Dir(dst))
}

func (g *Gate) loadSeen(sum string) (*seenRecord, error) {
	var s seenRecord
	err := durable.ReadJSON(g.statePath(seenDir, sum+".json"), &s)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// Decisions lists every recorded decision, oldest first.
func (g *Gate) Decisions() ([]Decision, error) {
	ents, err := os.ReadDir(g.statePath(decisionsDir))
	if err != nil {
		return nil, err
	}
	var out []Decision
	for _, e := range ents {
		var d Decision
		if filepath.Ext(e.Name()) != ".json" {
			continue
		}
		if err := durable.ReadJSON(g.statePath(decisionsDir, e.Name()), &d); err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}
