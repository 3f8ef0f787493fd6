package gate

import (
	"errors"
	"path/filepath"
	"time"

	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/ledger"
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
//	spare/s-*            empty files made ahead for a pass's writes
//	                     (Options.Spares; gate/durable/spares.go)
const (
	spareDir     = "spare"
	claimsDir    = "claims"
	decisionsDir = ledger.DecisionsDir
	pendingDir   = ledger.PendingDir
	seenDir      = ledger.SeenDir
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

// seenRecord is a seen/SHA256.json record (ledger.Seen).
type seenRecord = ledger.Seen

func (g *Gate) statePath(parts ...string) string {
	return filepath.Join(append([]string{g.state}, parts...)...)
}

// Decisions lists every recorded decision, oldest first (ledger.All).
func (g *Gate) Decisions() ([]Decision, error) { return ledger.New(g.state).All() }
