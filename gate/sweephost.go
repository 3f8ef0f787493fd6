package gate

// The gate's side of gate/sweep: the lock, the policy, the decision ids
// reverify accepts, Run's periodic sweep, and the host the engine asks for
// the audit log, the folder pages, the commit signature and the inbox.

import (
	"fmt"
	"github.com/fedmem/fedmem/gate/readers"
	"path"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fedmem/fedmem/gate/commit"
	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/durable"
	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/gate/sweep"
	"github.com/fedmem/fedmem/vault/repo"
)

// sweeper is the gate's sweep engine.
func (g *Gate) sweeper() *sweep.Engine {
	return sweep.New(sweep.Config{Repo: g.repo, Log: g.log, Now: g.now, Intent: durable.Intent(g.statePath(sweep.IntentFile)),
		Vault: g.vaultDir, Host: sweepHost{g}})
}

type sweepHost struct{ g *Gate }

func (h sweepHost) Note(kind string, data any) { h.g.note(kind, data) }

func (h sweepHost) Audit(kind string, data map[string]string) error {
	_, err := h.g.audit.Append(kind, data)
	return err
}

func (h sweepHost) Changes(head repo.Hash, p string, content []byte, logLine string) ([]repo.Change, error) {
	cs := commit.NewChangeSet(h.g.repo, head)
	cs.Set(p, content)
	if logLine != "" {
		if err := cs.AppendLine(path.Dir(p)+"/log.md", commit.LogHeader, logLine); err != nil {
			return nil, err
		}
	}
	return cs.List(), nil
}

func (h sweepHost) Signature(pol *policy.Policy) repo.Signature { return h.g.signature(pol) }

func (h sweepHost) PruneSessions(pol *policy.Policy, now time.Time) *sweep.SessionPrune {
	return h.g.sweepSessions(pol, now)
}

func (h sweepHost) ReadersOf(p string) ([]string, int) {
	return readers.Of(h.g.vaultDir, h.g.state, p)
}

// Sweep withholds every active note that is past its `stale_after` or whose
// fingerprinted sources changed at HEAD, and removes the empty session
// folders of 90-inbox/ whose grace period passed (pruneSessions); see
// sweep.Engine.Sweep.
func (g *Gate) Sweep() (*sweep.Summary, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	defer g.refreshView() // HEAD may have moved: the sandbox's view follows (viewhost.go)
	e := g.sweeper()
	if err := e.Finish(); err != nil {
		return nil, err
	}
	pol, err := g.Policy()
	if err != nil {
		return nil, err
	}
	return e.Sweep(pol)
}

// sweepSessions prunes empty session folders and records the counts for
// `fedmem gate status`. Failures are reported in the result, never fatal to
// the sweep.
func (g *Gate) sweepSessions(pol *policy.Policy, now time.Time) *sweep.SessionPrune {
	hours := pol.PruneEmptyAfterHours
	in, err := g.openInbox()
	if err != nil {
		return &sweep.SessionPrune{AfterHours: hours, Pruned: []string{}, Errors: []string{err.Error()}}
	}
	defer in.Close()
	p := sweep.PruneSessions(in, hours, now, g.note)
	p.HeldMarksPruned = g.pruneHeldMarks(in)
	var problems []string
	p.ReceiptsStored, problems = g.storeSessionReceipts(in, pol)
	p.Errors = append(p.Errors, problems...)
	if err := g.recordPrune(p, now); err != nil {
		p.Errors = append(p.Errors, "record prune status: "+err.Error())
	}
	return p
}

// Reverify re-checks a withheld note, named by its vault path or by the id
// of the decision that promoted it: every fingerprinted source must have its
// recorded blob id at HEAD and every policy verifier for its type must pass
// (run on the note as it stands). Then it is restored by a gate commit
// (status stable, `withheld` dropped, a fresh stale_after if the old one
// passed, `verified: {by: <by>}`); otherwise the result lists what fails.
// reviewer is the human asking ("" when the gate user runs it directly: the
// note then records process:fedmem-gate).
func (g *Gate) Reverify(ref, reviewer string) (*sweep.ReverifyResult, error) {
	by := decide.GateActor
	if reviewer != "" {
		if !validReviewer(reviewer) {
			return nil, fmt.Errorf("reviewer name %q is not usable", reviewer)
		}
		by = "human:" + reviewer
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	defer g.refreshView() // HEAD may have moved: the sandbox's view follows (viewhost.go)
	e := g.sweeper()
	if err := e.Finish(); err != nil {
		return nil, err
	}
	p, err := g.notePath(ref)
	if err != nil {
		return nil, err
	}
	pol, err := g.Policy()
	if err != nil {
		return nil, err
	}
	return e.Reverify(pol, p, by)
}

// notePath turns a reverify argument into a vault path: a decision id (the
// path it promoted; a unique prefix of it will do) or a vault path of a note.
func (g *Gate) notePath(ref string) (string, error) {
	if !strings.ContainsAny(ref, "/") && !strings.HasSuffix(ref, ".md") {
		id, err := g.ledger.Resolve(ref, false)
		if err != nil {
			return "", err
		}
		if d, err := g.ledger.Load(id); err == nil && d != nil && d.Path != "" {
			return d.Path, nil
		}
		return "", fmt.Errorf("decision %s promoted no note", id)
	}
	p := strings.TrimPrefix(ref, "/")
	if why := decide.SourcePathError(p); why != "" || !strings.HasSuffix(p, ".md") {
		if why == "" {
			why = "is not a .md note"
		}
		return "", fmt.Errorf("%q is neither a decision id nor a note path: it %s", decide.ClipText(ref), why)
	}
	if top, _, _ := strings.Cut(p, "/"); sweep.Skipped(top) {
		return "", fmt.Errorf("%s: notes in %s/ are never withheld", p, top)
	}
	return p, nil
}

// lastSweep rate-limits the sweep Run does from its backstop timer.
var lastSweep sync.Map // *Gate → time.Time

// SweepEvery is the least time between two sweeps from Run.
var SweepEvery = time.Minute

// sweepTick is Run's periodic sweep: at most once per SweepEvery, failures
// logged (the next tick retries).
func (g *Gate) sweepTick() {
	now := time.Now()
	if t, ok := lastSweep.Load(g); ok && now.Sub(t.(time.Time)) < SweepEvery {
		return
	}
	lastSweep.Store(g, now)
	s, err := g.Sweep()
	if err != nil {
		g.log.Error("sweep failed", "err", err)
		return
	}
	for _, e := range s.Errors {
		g.log.Error("sweep", "err", e)
	}
	if p := s.Sessions; p != nil {
		for _, e := range p.Errors {
			g.log.Error("sweep sessions", "err", e)
		}
		if len(p.Pruned) > 0 {
			g.log.Info("pruned empty sessions", "sessions", p.Pruned, "waiting", p.Waiting, "kept", p.Kept)
		}
	}
	if len(s.Withheld) > 0 {
		paths := make([]string, 0, len(s.Withheld))
		for _, w := range s.Withheld {
			paths = append(paths, w.Path)
		}
		sort.Strings(paths)
		g.log.Info("swept", "checked", s.Checked, "withheld", paths)
	}
}
