package gate

import (
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/fedmem/fedmem/gate/durable"
	"github.com/fedmem/fedmem/gate/sweep"
	"github.com/fedmem/fedmem/vault"
)

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
func (g *Gate) recordPrune(p *sweep.SessionPrune, now time.Time) error {
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
