package gate

// After a sync, the replayed commits are judged again (issue 24 item 3):
// two gates that each promoted a note named "Deployment region" (each
// against its own HEAD, where the name was free) both stayed in force once
// the replay moved the later one to `-2.md`. Now, before a local promotion
// is replayed on the remote tip, its note is checked against the notes in
// force there (decide/conflictindex.go, every folder, withheld names too). One
// that contradicts a note in force is not replayed: the remote's note,
// first on the shared branch, stays; the local one — the later — is held
// for review (decision pending, rule conflict, naming the note), its
// receipt updated, with an audit entry `sync-held`. Never two in force.
//
// The held draft is the promoted note with what the gate wrote taken out
// (status, generated, verified, stale_after, fingerprints) and the
// draft's claims put back where they were: the same keys and body the
// draft had, judged again in full when a reviewer approves (supersede,
// retitle or reject, approvechoice.go).

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/durable"
	"github.com/fedmem/fedmem/gate/ledger"
	"github.com/fedmem/fedmem/gate/remote"
	"github.com/fedmem/fedmem/gate/sweep"
	"github.com/fedmem/fedmem/gate/trailer"
	"github.com/fedmem/fedmem/gate/validate"
	"github.com/fedmem/fedmem/vault/note"
	"github.com/fedmem/fedmem/vault/repo"
)

// RuleSyncHeld is the info a decision held after a sync carries.
const RuleSyncHeld = "sync-held"

// syncHold is one local promotion not replayed (remote.Hold).
type syncHold = remote.Hold

// replayContradicts judges the note of local promotion com against tip:
// nil when it may be replayed, else the hold to record.
func (g *Gate) replayContradicts(com *repo.Commit, tip repo.Hash) (*syncHold, error) {
	p := trailer.Value(com.Message, trailer.Path)
	if p == "" || trailer.Value(com.Message, trailer.Decision) != StatePromoted {
		return nil, nil
	}
	ours, err := g.repo.FileAt(com.Hash, p)
	if err != nil || ours == nil {
		return nil, err
	}
	res, err := validate.Draft(ours)
	if err != nil || res.Note == nil {
		return nil, err
	}
	hv, err := decide.NewHeadView(g.repo, tip)
	if err != nil {
		return nil, err
	}
	fs, err := decide.Conflicts(res, "", "", hv)
	if err != nil || len(fs) == 0 {
		return nil, err
	}
	draft, err := heldDraftOf(res.Note)
	if err != nil {
		return nil, err
	}
	fs = append(fs, note.Finding{Rule: RuleSyncHeld, Severity: note.Info,
		Message: fmt.Sprintf("promoted here as %s (commit %.12s), then the remote, synced first, held a note of the same name: not replayed, held for a reviewer (supersede, retitle or reject)", p, com.Hash)})
	return &syncHold{Path: p, Reasons: fs, Draft: draft}, nil
}

// heldDraftOf turns a promoted note back into the draft it was made from:
// the gate's keys dropped, the draft's claims (under `claimed:`) back at
// the top level, each source's fingerprint dropped.
func heldDraftOf(n *note.Note) ([]byte, error) {
	front := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	var claimed *yaml.Node
	for i := 0; i+1 < len(n.Front.Content); i += 2 {
		k, v := n.Front.Content[i], n.Front.Content[i+1]
		switch k.Value {
		case "claimed":
			claimed = v
		case "status", "generated", "verified", "stale_after", decide.WithheldKey, "superseded_by":
		case "sources":
			if v.Kind == yaml.SequenceNode {
				for _, e := range v.Content {
					if e.Kind == yaml.MappingNode {
						sweep.DropKey(e, "fingerprint")
					}
				}
			}
			front.Content = append(front.Content, k, v)
		default:
			front.Content = append(front.Content, k, v)
		}
	}
	if claimed != nil && claimed.Kind == yaml.MappingNode {
		front.Content = append(front.Content, claimed.Content...)
	}
	return note.Render(front, n.Body)
}

// holdReplayed records the holds of a replay: each promoted decision
// becomes pending with the hold's reasons, its bytes kept for review, its
// receipt rewritten. Idempotent (a decision already pending is left).
func (g *Gate) holdReplayed(holds map[string]syncHold) {
	if len(holds) == 0 {
		return
	}
	in, err := g.openInbox()
	if err != nil {
		g.log.Warn("inbox unavailable; receipts of held drafts keep their promotion", "err", err)
	} else {
		defer in.Close()
	}
	for id, h := range holds {
		if !ledger.ValidID(id) {
			continue
		}
		d, err := g.ledger.Load(id)
		if err != nil || d == nil || d.State != StatePromoted {
			continue
		}
		if err := durable.WriteAtomic(g.statePath(pendingDir, id+".draft"), h.Draft, 0o600); err != nil {
			g.log.Error("held draft not kept", "id", id, "err", err)
			continue
		}
		was := d.Commit
		d.State, d.Commit, d.Path, d.AutoPromoted = StatePending, "", h.Path, false
		d.Reasons = append(d.Reasons, h.Reasons...)
		validate.Sort(d.Reasons)
		if err := durable.WriteJSON(g.statePath(decisionsDir, id+".json"), d); err != nil {
			g.log.Error("held decision not recorded", "id", id, "err", err)
			continue
		}
		if d.SHA256 != "" {
			_ = durable.WriteJSON(g.statePath(seenDir, d.SHA256+".json"), seenRecord{ID: d.ID, State: d.State})
		}
		var rules []string
		for _, r := range h.Reasons {
			rules = append(rules, r.Rule+": "+r.Message)
		}
		g.note(RuleSyncHeld, map[string]string{"id": id, "path": h.Path, "was_commit": was, "reasons": strings.Join(rules, "; ")})
		g.log.Warn("promotion held after sync: the remote holds a note of the same name", "id", id, "path", h.Path)
		if in != nil {
			raw := d.Draft
			if d.DraftRaw != nil {
				raw = string(d.DraftRaw)
			}
			if err := g.writeReceipt(in, d.Session, raw, receiptJSON(d)); err != nil {
				g.log.Warn("receipt not updated after hold", "id", id, "err", err)
			}
		}
	}
	if g.rates != nil {
		g.rates = nil // recounted from the decisions
	}
}
