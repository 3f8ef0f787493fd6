package gate

// A receipt never confirms another session's draft (issue 24). A draft
// whose bytes equal a draft of another session still shares that draft's
// fate (held with it and settled by the same review; refused when a human
// or a rule refused it before — resubmitting refused content from a new
// session must not get it through), but before, its receipt said so: a
// "duplicate" or "resubmitted" reason naming the other decision, and its
// id. An agent that guessed another session's held content (a note about
// a colleague's incident, an approval it hopes for) learned from its own
// receipt that the guess was right. Now such a receipt carries the state
// only, with a reason that any held or refused draft could have. A
// promoted note is in the vault for every reader: a duplicate of one
// still says so.

import (
	"github.com/fedmem/fedmem/vault/note"
)

// privatePrior reports whether prior (the first decision on the same
// content) belongs to another session than sess and is not public.
func (g *Gate) privatePrior(prior *seenRecord, sess string) (bool, error) {
	if prior.State == StatePromoted {
		return false, nil
	}
	pd, err := g.ledger.Load(prior.ID)
	if err != nil || pd == nil {
		return false, err
	}
	return pd.Session != sess, nil
}

// redactPrivateDuplicate strips from r what would confirm the other
// session's draft.
func redactPrivateDuplicate(d *Decision, r *Receipt) {
	if !d.DuplicatePrivate || d.State == StatePromoted {
		return
	}
	r.DuplicateOf, r.Path, r.Commit = "", "", ""
	switch d.State {
	case StatePending:
		r.Reasons = []note.Finding{{Rule: "review-required", Severity: note.Flag, Message: "held for a reviewer"}}
	case StateRejected:
		r.Reasons = []note.Finding{{Rule: "rejected", Severity: note.Error, Message: "refused; a reviewer can see why"}}
	}
}
