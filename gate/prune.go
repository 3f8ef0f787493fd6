package gate

import (
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/fedmem/fedmem/gate/durable"
	"github.com/fedmem/fedmem/vault"
)

// SessionPrune is what a sweep did with empty session folders under
// 90-inbox/. Fields are only ever added.
type SessionPrune struct {
	// AfterHours is the policy's grace period
	// (inbox.prune_empty_sessions_after_hours); 0: pruning is off.
	AfterHours int `json:"after_hours"`
	// Pruned lists the empty session folders removed by this sweep.
	Pruned []string `json:"pruned"`
	// Waiting counts empty folders kept: still within the grace period, or
	// of a session whose record says it has not ended.
	Waiting int `json:"waiting"`
	// Kept counts folders holding anything (drafts, receipts): never pruned.
	Kept int `json:"kept"`
	// HeldMarksPruned counts the gate's held/ marks dropped because their
	// entry left its session folder (pruneHeldMarks).
	HeldMarksPruned int `json:"held_marks_pruned,omitempty"`
	// ReceiptsStored counts the ended sessions whose record (with its
	// read receipt) the gate copied into its state and audit log
	// (storeSessionReceipts).
	ReceiptsStored int      `json:"receipts_stored,omitempty"`
	Errors         []string `json:"errors,omitempty"`
}

// PruneStatus is the last sweep's pruning, kept in the state directory for
// `fedmem gate status` (which does not take the gate's lock).
type PruneStatus struct {
	At          time.Time `json:"at"`
	AfterHours  int       `json:"after_hours"`
	Pruned      int       `json:"pruned"`
	Waiting     int       `json:"waiting"`
	Kept        int       `json:"kept"`
	PrunedTotal int       `json:"pruned_total"`
}

const pruneStateFile = "prune.json"

// recordPrune keeps the counts of one sweep's pruning (and the running total).
func (g *Gate) recordPrune(p *SessionPrune, now time.Time) error {
	var st PruneStatus
	if err := durable.ReadJSON(g.statePath(pruneStateFile), &st); err != nil && !errors.Is(err, os.ErrNotExist) {
		st = PruneStatus{}
	}
	st.At, st.AfterHours = now, p.AfterHours
	st.Pruned, st.Waiting, st.Kept = len(p.Pruned), p.Waiting, p.Kept
	st.PrunedTotal += len(p.Pruned)
	return durable.WriteJSON(g.statePath(pruneStateFile), st)
}

// ReadPruneStatus reads what the last sweep pruned (nil when no sweep has
// recorded any).
func ReadPruneStatus(vaultDir, stateDir string) (*PruneStatus, error) {
	dir, err := vault.Resolve(vaultDir)
	if err != nil {
		return nil, err
	}
	if stateDir == "" {
		stateDir = DefaultStateDir(dir)
	}
	var st PruneStatus
	err = durable.ReadJSON(filepath.Join(stateDir, pruneStateFile), &st)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &st, nil
}
