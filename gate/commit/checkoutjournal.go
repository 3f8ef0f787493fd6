package commit

import (
	"fmt"
	"path"
	"strings"

	"github.com/fedmem/fedmem/gate/durable"
	"github.com/fedmem/fedmem/vault/repo"
)

// The checkout journal (issue 24 item 6, the recovery race of docs/gate.md).
// A group flush moves the branch, then writes the group's files into the
// work tree and their entries into .git/index. A gate killed between the
// two left HEAD ahead of the index; the drafts' adoption on restart
// repaired it only while they were undecided. checkout.json, in the state
// directory, lists the files the flush is about to check out; it is
// written before the branch moves (synced by the group's first barrier)
// and removed once the index is written (a review's approval, committed on
// its own, journals its files the same way, synced before its branch
// move: Promote). Open finds it left by a killed
// gate and checks those files out again at HEAD — work tree and index —
// whoever decided what since. Redoing it is idempotent; a path HEAD does
// not hold (the branch never moved) is skipped.
const CheckoutJournal = "checkout.json"

func (e *Engine) checkoutIntent() durable.Intent { return durable.Intent(e.statePath(CheckoutJournal)) }

type CheckoutRecord struct {
	Paths []string `json:"paths"`
}

// journalCheckout records the open group's files in the checkout journal,
// with those of a journal an earlier flush left (its checkout failed).
func (e *Engine) journalCheckout() error {
	return e.journalPaths(e.repo.BatchFiles())
}

// journalPaths records paths in the checkout journal, with those already
// there. Outside a pass's group mode the write is synced before it
// returns; inside, by the group's next barrier.
func (e *Engine) journalPaths(paths []string) error {
	if e.journaled {
		// An earlier checkout of this gate did not finish (it failed):
		// the journal lists its files; they are redone at checkoutDone.
		e.journalExtra = true
	}
	if len(paths) == 0 {
		return nil
	}
	var rec CheckoutRecord
	if _, err := e.checkoutIntent().Load(&rec); err != nil {
		return fmt.Errorf("checkout journal: %w", err)
	}
	have := map[string]bool{}
	for _, p := range rec.Paths {
		have[p] = true
	}
	mine := map[string]bool{}
	for _, p := range paths {
		mine[p] = true
		if !have[p] {
			have[p] = true
			rec.Paths = append(rec.Paths, p)
		}
	}
	for _, p := range rec.Paths {
		if !mine[p] {
			// Left by an earlier checkout that failed: redone whole,
			// at HEAD, once this one is done (checkoutDone).
			e.journalExtra = true
		}
	}
	if err := e.checkoutIntent().Record(rec); err != nil {
		return fmt.Errorf("checkout journal: %w", err)
	}
	e.journaled = true
	return nil
}

// checkoutDone drops the checkout journal once the files journaled were
// checked out. A removal lost to a crash only makes the next Open redo a
// checkout already done. When the journal also listed files of an
// earlier checkout that failed, those are checked out at HEAD first; if
// that fails too the journal stays, for the next Open.
func (e *Engine) checkoutDone() {
	if !e.journaled {
		return
	}
	e.journaled = false
	if e.journalExtra {
		e.journalExtra = false
		if err := e.redoCheckout(); err != nil {
			e.log.Warn("checkout journal kept", "err", err)
		}
		return
	}
	e.checkoutIntent().Done()
}

// RecoverCheckout redoes the checkout a killed gate's flush journaled:
// every listed file HEAD holds is written to the work tree and the index
// as HEAD has it. Called by Open, holding the state lock, before any pass.
func (e *Engine) RecoverCheckout() error { return e.redoCheckout() }

// redoCheckout checks every file the journal lists out at HEAD (work tree
// and index, now, even inside a group) and removes the journal; no
// journal: nothing to do.
func (e *Engine) redoCheckout() error {
	file := e.statePath(CheckoutJournal)
	var rec CheckoutRecord
	if ok, err := e.checkoutIntent().Load(&rec); err != nil {
		return fmt.Errorf("checkout journal: %w", err)
	} else if !ok {
		return nil
	}
	_, head, err := e.repo.Head()
	if err != nil {
		return err
	}
	var ch []repo.Change
	for _, p := range rec.Paths {
		if p == "" || path.IsAbs(p) || path.Clean(p) != p || p == ".." || strings.HasPrefix(p, "../") ||
			p == ".git" || strings.HasPrefix(p, ".git/") {
			return fmt.Errorf("checkout journal %s: %q is not a path in the vault", file, p)
		}
		if head.IsZero() {
			continue
		}
		cur, err := e.repo.FileAt(head, p)
		if err != nil {
			return fmt.Errorf("checkout journal %s: %s at HEAD: %w", file, p, err)
		}
		if cur != nil {
			ch = append(ch, repo.Change{Path: p, Content: cur})
		}
	}
	if len(ch) > 0 {
		if err := e.repo.CheckoutNow(ch); err != nil {
			return fmt.Errorf("checkout journal %s: redo: %w", file, err)
		}
	}
	e.log.Info("checkout redone", "files", len(ch), "journaled", len(rec.Paths))
	return e.checkoutIntent().Done()
}
