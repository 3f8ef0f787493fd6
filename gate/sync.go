package gate

// Remote sync (docs/multi-machine.md) is gate/remote's; this file is the
// gate's side of it: when a pass ends it syncs with the remote the policy
// names, and after a branch move it points the decisions of replayed
// promotions at their new commits, holds the promotions not replayed
// (synchold.go) and judges its held drafts again.

import (
	"errors"
	"os"
	"sort"

	"github.com/fedmem/fedmem/gate/commit"
	"github.com/fedmem/fedmem/gate/durable"
	"github.com/fedmem/fedmem/gate/ledger"
	"github.com/fedmem/fedmem/gate/remote"
	"github.com/fedmem/fedmem/gate/validate"
	"github.com/fedmem/fedmem/vault"
	"github.com/fedmem/fedmem/vault/note"
	"github.com/fedmem/fedmem/vault/repo"
)

// SyncStatus is the state of remote sync, as `fedmem gate status` and
// `fedmem doctor --vault` show it (remote.Status).
type SyncStatus = remote.Status

// FlaggedDraft is a held draft whose verdict changed after the remote moved.
type FlaggedDraft = remote.FlaggedDraft

// ErrRemoteDeadline is returned when a remote operation passed its deadline
// or the gate was asked to stop while it ran.
var ErrRemoteDeadline = remote.ErrDeadline

// ErrRemoteRewrote is returned when the remote's history does not hold
// what this gate published there, or forges one of its promotions.
var ErrRemoteRewrote = remote.ErrRewrote

// maxRecheck bounds the held drafts judged again after one remote move.
const maxRecheck = 500

// syncFault is a test hook called at named points of a sync (a test's
// helper process kills itself there); it does nothing in the binary.
var syncFault = func(point string) {}

// syncer is the sync engine of this gate (the gate is its Host).
func (g *Gate) syncer() *remote.Engine {
	return remote.New(remote.Config{Repo: g.repo, Log: g.log, Now: g.now, State: g.state, Host: syncHost{g},
		Deadline: &g.remote, Fault: func(p string) { syncFault(p) }, Pages: map[string]string{"log.md": commit.LogHeader, "index.md": commit.IndexHeader}})
}

// syncHost is the gate as remote.Host.
type syncHost struct{ g *Gate }

func (h syncHost) Note(kind string, data any) { h.g.note(kind, data) }
func (h syncHost) AllocPath(tip repo.Hash, want, id, sum string) (string, error) {
	return h.g.commits.AllocPath(tip, want, id, sum)
}
func (h syncHost) Contradicts(com *repo.Commit, tip repo.Hash) (*remote.Hold, error) {
	return h.g.replayContradicts(com, tip)
}
func (h syncHost) Moved(st *remote.File, head repo.Hash, remap, paths map[string]string, held map[string]remote.Hold) {
	if len(remap) > 0 {
		h.g.remapDecisions(remap, paths)
	}
	h.g.holdReplayed(held)
	h.g.recheckPending(st, head)
}

// syncAfterPass is called at the end of every Once, with g.mu held. Errors
// are recorded in sync.json and the log, never returned: promotions stay
// local (queued) and the next pass retries.
func (g *Gate) syncAfterPass() {
	e := g.syncer()
	st := e.LoadFile()
	u, br := st.URL, st.ConfBranch
	pol, perr := g.Policy()
	switch {
	case perr == nil && pol.Remote == nil:
		if st.Configured {
			st.Configured = false
			_ = e.SaveFile(st)
		}
		return
	case perr == nil:
		u, br = pol.Remote.URL, pol.Remote.Branch
		g.remote.SetTimeout(pol.Remote.Timeout)
	case u == "":
		return
	default:
		// The policy in the work tree does not parse: keep syncing with the
		// remote last configured, so the fix (a reviewed push) can arrive.
		g.log.Warn("policy does not parse; syncing with the last configured remote", "remote", remote.RedactURL(u))
	}
	st.Configured, st.URL, st.ConfBranch, st.Remote = true, u, br, remote.RedactURL(u)
	st.LastAttempt = g.now().UTC()
	err := e.Run(st, u, br)
	if err != nil {
		st.LastError, st.LastErrorAt = remote.RedactErr(err, u), g.now().UTC()
		g.log.Error("sync failed", "remote", st.Remote, "err", st.LastError)
		g.note("sync-error", map[string]string{"remote": st.Remote, "error": st.LastError})
	} else {
		st.LastError = ""
	}
	e.FillCounts(&st.Status)
	if werr := e.SaveFile(st); werr != nil {
		g.log.Error("sync state not written", "err", werr)
	}
}

// Sync runs one sync now (what every pass ends with) and returns the state.
func (g *Gate) Sync() (*SyncStatus, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	defer g.refreshView() // HEAD may have moved: the sandbox's view follows (viewhost.go)
	g.syncAfterPass()
	e := g.syncer()
	st := e.LoadFile()
	if st.LastError != "" && st.LastErrorAt.Equal(st.LastAttempt) {
		return &st.Status, errors.New(st.LastError)
	}
	return &st.Status, nil
}

// remapDecisions points the decisions (and receipts) of replayed
// promotions at their new commits.
func (g *Gate) remapDecisions(remap, paths map[string]string) {
	in, err := g.openInbox()
	if err != nil {
		g.log.Warn("inbox unavailable; receipts keep the old commit ids", "err", err)
	} else {
		defer in.Close()
	}
	ids := make([]string, 0, len(remap))
	for id := range remap {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if !ledger.ValidID(id) {
			continue
		}
		d, err := g.ledger.Load(id)
		if err != nil || d == nil {
			continue
		}
		np := paths[id]
		if d.Commit == remap[id] && (np == "" || d.Path == np) {
			continue
		}
		old := d.Commit
		d.Commit = remap[id]
		if np != "" {
			d.Path = np
		}
		if err := durable.WriteJSON(g.statePath(decisionsDir, id+".json"), d); err != nil {
			g.log.Error("decision not updated after replay", "id", id, "err", err)
			continue
		}
		g.note("sync-remap", map[string]string{"id": id, "from": old, "to": d.Commit, "path": d.Path})
		if in != nil {
			raw := d.Draft
			if d.DraftRaw != nil {
				raw = string(d.DraftRaw)
			}
			if err := g.writeReceipt(in, d.Session, raw, receiptJSON(d)); err != nil {
				g.log.Warn("receipt not updated after replay", "id", id, "err", err)
			}
		}
	}
}

// recheckPending judges every held draft again against head (after the
// remote moved: its sources, conflicts and the policy may have changed) and
// flags those whose verdict differs from the one they were held with. The
// decision stays pending (a reviewer decides; approval judges again anyway);
// the flag says what changed.
func (g *Gate) recheckPending(st *remote.File, head repo.Hash) {
	pol, err := g.Policy()
	if err != nil {
		return
	}
	all, err := g.Decisions()
	if err != nil {
		return
	}
	in, err := g.openInbox()
	if err != nil {
		return
	}
	defer in.Close()
	old := map[string]FlaggedDraft{}
	for _, f := range st.Flagged {
		old[f.ID] = f
	}
	var flags []FlaggedDraft
	n := 0
	for _, d := range all {
		if d.State != StatePending || d.DuplicateOf != "" {
			continue
		}
		if n++; n > maxRecheck {
			g.log.Warn("more held drafts than one recheck covers; the rest keep their verdict", "max", maxRecheck)
			if f, ok := old[d.ID]; ok {
				flags = append(flags, f)
			}
			continue
		}
		b, err := os.ReadFile(g.statePath(pendingDir, d.ID+".draft"))
		if err != nil {
			continue
		}
		res, err := validate.DraftNamed(d.Draft, b)
		if err != nil {
			continue
		}
		v, _, err := g.judgeDraft(in, pol, d.Session, res)
		if err != nil {
			continue
		}
		before, after := ruleNames(d.Reasons), ruleNames(v.Reasons)
		if v.State == d.State && slicesEqual(before, after) {
			continue
		}
		f := FlaggedDraft{ID: d.ID, Head: head.String(), State: v.State, Before: before, After: after, At: g.now().UTC()}
		if o, ok := old[d.ID]; !ok || o.State != f.State || !slicesEqual(o.After, f.After) {
			g.note("recheck", map[string]any{"id": d.ID, "head": head.String(), "state": v.State, "before": before, "after": after})
		}
		flags = append(flags, f)
	}
	st.Flagged = flags
}

func ruleNames(fs []note.Finding) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, f := range fs {
		if !seen[f.Rule] {
			seen[f.Rule] = true
			out = append(out, f.Rule)
		}
	}
	sort.Strings(out)
	return out
}

func slicesEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// ReadSyncStatus reads the sync state of a vault's gate without taking its
// lock (a running gate holds it): the last sync's record from the state dir,
// ahead/behind counted now from the vault's HEAD and the remote tip last
// fetched. stateDir "" means the default.
func ReadSyncStatus(vaultDir, stateDir string) (*SyncStatus, error) {
	dir, err := vault.Resolve(vaultDir)
	if err != nil {
		return nil, err
	}
	if stateDir == "" {
		stateDir = DefaultStateDir(dir)
	}
	return remote.ReadStatus(dir, stateDir)
}
