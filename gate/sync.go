package gate

// Remote sync (issue 12; docs/multi-machine.md). With `remote: {url,
// branch}` in the policy, every pass ends with a sync of the vault's branch
// with the remote branch:
//
//   - fetch the remote branch into refs/remotes/fedmem/<branch>;
//   - remote == HEAD: nothing to do;
//   - the remote is behind HEAD: push HEAD with compare-and-swap (the update
//     names the remote tip just fetched; receive-pack applies it only if the
//     branch still has that value, under its ref lock);
//   - HEAD is behind the remote: fast-forward the branch (lock-file CAS) and
//     the changed paths of the work tree and index;
//   - both moved: replay the gate's own commits since the merge base onto the
//     remote tip, one new commit each; then push. A remote commit that
//     carries the draft id of a local promotion is a forgery, refused
//     (syncguard.go), as is a remote tip that does not contain the last
//     commit this gate published.
//
// Every step that moves the local branch writes sync.intent (state dir)
// first, so a gate killed at any point finishes the work tree, the
// decisions' commit ids and the audit on its next pass; a push is atomic on
// the server, so a kill mid-push leaves the remote either before or after
// it, and the next pass sees which. Nothing of the remote's URL beyond what
// the policy says is stored; credentials stay with the gate user's Git
// credential helpers and SSH keys; URLs are redacted in every message.

import (
	"bytes"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/fedmem/fedmem/gate/durable"
	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/gate/trailer"
	"github.com/fedmem/fedmem/gate/validate"
	"github.com/fedmem/fedmem/vault"
	"github.com/fedmem/fedmem/vault/note"
	"github.com/fedmem/fedmem/vault/repo"
)

const (
	// syncStateFile (state dir) holds the last sync's outcome and the remote
	// last configured (used when the policy in the work tree does not parse,
	// so that a fix pushed to the remote can still arrive).
	syncStateFile = "sync.json"
	// syncIntentFile names a branch move in progress (see finishSyncIntent).
	syncIntentFile = "sync.intent"
	// syncRemoteName names the anonymous remote; it is never written to
	// .git/config (which sandboxes can read).
	syncRemoteName = "fedmem"
	// syncAttempts bounds fetch/replay/push rounds per pass when the remote
	// keeps moving; the next pass tries again.
	syncAttempts = 5
	// maxRecheck bounds the held drafts judged again after one remote move.
	maxRecheck = 500
)

// SyncStatus is the state of remote sync, as `fedmem gate status` and
// `fedmem doctor --vault` show it. Fields are only ever added.
type SyncStatus struct {
	// Configured is true when the policy names a remote.
	Configured bool `json:"configured"`
	// Remote is the remote's URL with any user name removed.
	Remote      string `json:"remote,omitempty"`
	Branch      string `json:"branch,omitempty"`
	LocalBranch string `json:"local_branch,omitempty"`
	Head        string `json:"head,omitempty"`
	// RemoteHead is the remote tip the gate last saw (fetched or pushed).
	RemoteHead string `json:"remote_head,omitempty"`
	// Ahead counts local commits not on RemoteHead (queued promotions);
	// Behind counts remote commits not yet fast-forwarded.
	Ahead       int       `json:"ahead"`
	Behind      int       `json:"behind"`
	LastAttempt time.Time `json:"last_attempt,omitzero"`
	LastFetch   time.Time `json:"last_fetch,omitzero"`
	LastPush    time.Time `json:"last_push,omitzero"`
	// LastError is the last sync's error ("" after a success), redacted.
	LastError   string    `json:"last_error,omitempty"`
	LastErrorAt time.Time `json:"last_error_at,omitzero"`
	// Counters since the state dir was created.
	Pushes   int `json:"pushes"`
	Replayed int `json:"replayed"`
	// Skipped counts local commits not replayed because the remote
	// already holds their changes.
	Skipped int `json:"skipped"`
	// Published is the last commit this gate pushed (syncguard.go): every
	// later remote tip must contain it.
	Published string `json:"published,omitempty"`
	// PublishedTo is the remote and branch Published was pushed to (a
	// remote the policy names anew starts without one).
	PublishedTo string `json:"published_to,omitempty"`
	// Dropped counts lifecycle commits (withhold/restore) not replayed
	// because the remote changed the same note; the next sweep re-derives
	// them from the new HEAD.
	Dropped int `json:"dropped"`
	// Flagged are held drafts whose verdict against the new HEAD differs
	// from the one they were held with (re-judged after a remote move).
	Flagged []FlaggedDraft `json:"flagged,omitempty"`
}

// FlaggedDraft is a held draft whose verdict changed after the remote moved.
type FlaggedDraft struct {
	ID     string    `json:"id"`
	Head   string    `json:"head"`
	State  string    `json:"state"`
	Before []string  `json:"before"`
	After  []string  `json:"after"`
	At     time.Time `json:"at"`
}

type syncFile struct {
	SyncStatus
	// URL is the remote as the policy last named it (no secrets: the
	// policy refuses them). Kept in the gate-private state dir only.
	URL        string `json:"url,omitempty"`
	ConfBranch string `json:"conf_branch,omitempty"`
}

type syncIntent struct {
	Kind string `json:"kind"` // fast-forward | replay
	Old  string `json:"old"`
	New  string `json:"new"`
	// Remap: draft id → the commit now holding its promotion; Paths: draft
	// id → its new path when the replay had to move the note.
	Remap map[string]string `json:"remap,omitempty"`
	Paths map[string]string `json:"paths,omitempty"`
	// Held: draft id → a local promotion not replayed because it
	// contradicts a note in force on the remote (synchold.go).
	Held map[string]syncHold `json:"held,omitempty"`
}

// syncFault is a test hook called at named points of a sync (a test's
// helper process kills itself there); it does nothing in the binary.
var syncFault = func(point string) {}

// errReplayConflict: a local commit cannot be replayed on the remote tip.
var errReplayConflict = errors.New("replay conflict")

func (g *Gate) loadSyncFile() *syncFile {
	var st syncFile
	if err := durable.ReadJSON(g.statePath(syncStateFile), &st); err != nil && !errors.Is(err, os.ErrNotExist) {
		g.log.Warn("sync state unreadable; starting afresh", "err", err)
		st = syncFile{}
	}
	return &st
}

// syncAfterPass is called at the end of every Once, with g.mu held. Errors
// are recorded in sync.json and the log, never returned: promotions stay
// local (queued) and the next pass retries.
func (g *Gate) syncAfterPass() {
	st := g.loadSyncFile()
	u, br := st.URL, st.ConfBranch
	pol, perr := g.Policy()
	switch {
	case perr == nil && pol.Remote == nil:
		if st.Configured {
			st.Configured = false
			_ = durable.WriteJSON(g.statePath(syncStateFile), st)
		}
		return
	case perr == nil:
		u, br = pol.Remote.URL, pol.Remote.Branch
		g.setRemoteTimeout(pol.Remote.Timeout)
	case u == "":
		return
	default:
		// The policy in the work tree does not parse: keep syncing with the
		// remote last configured, so the fix (a reviewed push) can arrive.
		g.log.Warn("policy does not parse; syncing with the last configured remote", "remote", redactURL(u))
	}
	st.Configured, st.URL, st.ConfBranch, st.Remote = true, u, br, redactURL(u)
	st.LastAttempt = g.now().UTC()
	err := g.sync(st, u, br)
	if err != nil {
		st.LastError, st.LastErrorAt = redactErr(err, u), g.now().UTC()
		g.log.Error("sync failed", "remote", st.Remote, "err", st.LastError)
		g.note("sync-error", map[string]string{"remote": st.Remote, "error": st.LastError})
	} else {
		st.LastError = ""
	}
	g.fillCounts(&st.SyncStatus)
	if werr := durable.WriteJSON(g.statePath(syncStateFile), st); werr != nil {
		g.log.Error("sync state not written", "err", werr)
	}
}

// Sync runs one sync now (what every pass ends with) and returns the state.
func (g *Gate) Sync() (*SyncStatus, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.syncAfterPass()
	st := g.loadSyncFile()
	if st.LastError != "" && st.LastErrorAt.Equal(st.LastAttempt) {
		return &st.SyncStatus, errors.New(st.LastError)
	}
	return &st.SyncStatus, nil
}

func (g *Gate) sync(st *syncFile, rawURL, rbranch string) error {
	if err := g.finishSyncIntent(st); err != nil {
		return fmt.Errorf("finish interrupted sync: %w", err)
	}
	lb, _, err := g.repo.Head()
	if err != nil {
		return err
	}
	if rbranch == "" {
		rbranch = lb.Short()
	}
	st.Branch, st.LocalBranch = rbranch, lb.Short()
	rem := g.repo.Remote(syncRemoteName, rawURL, rbranch, g.remoteOp)
	for attempt := 0; attempt < syncAttempts; attempt++ {
		R, err := rem.Fetch()
		if err != nil {
			return fmt.Errorf("fetch: %w", err)
		}
		st.LastFetch = g.now().UTC()
		st.RemoteHead = R.String()
		if err := g.checkPublished(st, R, rawURL, rbranch); err != nil {
			return err
		}
		lb, L, err := g.repo.Head()
		if err != nil {
			return err
		}
		if R == L {
			return nil
		}
		base, local, _, err := g.repo.MergeBase(L, R, maxRecoveryWalk)
		if err != nil {
			return err
		}
		switch {
		case base == R || R.IsZero():
			syncFault("before-push")
			perr := rem.Push(lb, R)
			if perr == nil {
				syncFault("after-push")
				st.LastPush = g.now().UTC()
				st.Pushes++
				st.Published, st.PublishedTo = L.String(), redactURL(rawURL)+" "+rbranch
				st.RemoteHead = L.String()
				_ = rem.Tracked(L)
				g.note("sync-push", map[string]any{"remote": redactURL(rawURL), "branch": rbranch, "from": R.String(), "to": L.String(), "commits": len(local)})
				g.log.Info("pushed", "remote", redactURL(rawURL), "to", L.String(), "commits", len(local))
				return nil
			}
			// The remote moved between fetch and push (the CAS failed):
			// fetch again and replay. Anything else is the error.
			if R2, ferr := rem.Fetch(); ferr == nil && R2 != R {
				continue
			}
			return fmt.Errorf("push %d commit(s) to %s: %w", len(local), rbranch, perr)
		case base == L:
			if err := g.fastForward(st, lb, L, R); err != nil {
				return fmt.Errorf("fast-forward to %s: %w", R.String()[:12], err)
			}
			return nil
		default:
			if err := g.replay(st, lb, L, R, base, local, rawURL); err != nil {
				return err
			}
		}
	}
	return fmt.Errorf("the remote kept moving: gave up after %d rounds (the next pass tries again)", syncAttempts)
}

// fastForward moves the local branch from L to R and brings the changed
// paths of the work tree and index to R. Paths are checked before the branch
// moves: nothing outside the vault's tracked folders (never .git, never a
// session's inbox folder), regular files only.
func (g *Gate) fastForward(st *syncFile, lb repo.RefName, L, R repo.Hash) error {
	if _, err := g.workTreeChanges(L, R, R); err != nil {
		return err
	}
	if err := g.syncIntent().Record(syncIntent{Kind: "fast-forward", Old: L.String(), New: R.String()}); err != nil {
		return err
	}
	if err := g.repo.CASRef(lb, L, R); err != nil {
		g.syncIntent().Done()
		return err
	}
	syncFault("ff-moved")
	g.note("sync-fast-forward", map[string]string{"from": L.String(), "to": R.String()})
	g.log.Info("fast-forwarded", "from", L.String(), "to", R.String())
	return g.finishSyncIntent(st)
}

// finishSyncIntent completes a branch move recorded in sync.intent: the
// paths that differ between Old and New are written from the current HEAD
// (later gate commits may have changed some again), the decisions of
// replayed promotions get their new commit ids (and paths), held drafts are
// judged again against HEAD, and the intent is removed. If the branch never
// left Old, the intent is dropped.
func (g *Gate) syncIntent() durable.Intent { return durable.Intent(g.statePath(syncIntentFile)) }

func (g *Gate) finishSyncIntent(st *syncFile) error {
	var in syncIntent
	if ok, err := g.syncIntent().Load(&in); !ok {
		return err
	}
	_, head, err := g.repo.Head()
	if err != nil {
		return err
	}
	oldH, newH := repo.NewHash(in.Old), repo.NewHash(in.New)
	if head == oldH {
		return g.syncIntent().Done()
	}
	if head != newH {
		if base, _, _, err := g.repo.MergeBase(head, newH, maxRecoveryWalk); err != nil || base != newH {
			g.log.Warn("sync intent names a commit HEAD does not contain; dropped", "new", in.New)
			return g.syncIntent().Done()
		}
	}
	wt, err := g.workTreeChanges(oldH, newH, head)
	if err != nil {
		return err
	}
	if err := g.applyWorkTree(wt); err != nil {
		return err
	}
	if len(in.Remap) > 0 {
		g.remapDecisions(in.Remap, in.Paths)
	}
	g.holdReplayed(in.Held)
	g.recheckPending(st, head)
	return g.syncIntent().Done()
}

// wtChange is one path of the work tree to bring to a commit.
type wtChange struct {
	path    string
	content []byte // nil: delete
}

// syncPathError says why the gate will not write p into its work tree from a
// remote commit, or "".
func syncPathError(p string) string {
	if p == "" || strings.HasPrefix(p, "/") || strings.ContainsAny(p, "\\\x00\r\n") {
		return "is not a clean relative path"
	}
	parts := strings.Split(p, "/")
	for _, c := range parts {
		if c == "" || c == "." || c == ".." || strings.EqualFold(c, ".git") {
			return "has an empty, '.', '..' or .git component"
		}
	}
	if parts[0] == vault.InboxDir && len(parts) > 2 {
		return "is inside a session's inbox folder (agents write there; a remote never does)"
	}
	return ""
}

// workTreeChanges lists the paths that differ between commits from and to,
// with their content at commit at (nil where at has none).
func (g *Gate) workTreeChanges(from, to, at repo.Hash) ([]wtChange, error) {
	chs, err := g.repo.Diff(from, to)
	if err != nil {
		return nil, err
	}
	var out []wtChange
	for _, ch := range chs {
		p := ch.To
		if p == "" {
			p = ch.From
		}
		if why := syncPathError(p); why != "" {
			return nil, fmt.Errorf("remote path %q %s", p, why)
		}
		e, err := g.repo.EntryAt(at, p)
		if err != nil {
			return nil, err
		}
		if e == nil {
			out = append(out, wtChange{path: p})
			continue
		}
		if e.Mode != repo.ModeRegular && e.Mode != repo.ModeExecutable && e.Mode != repo.ModeDeprecated {
			return nil, fmt.Errorf("remote path %q is a %s; the gate checks out regular files only", p, modeName(e.Mode))
		}
		b, err := g.repo.WholeFileAt(at, p)
		if err != nil {
			return nil, err
		}
		if b == nil {
			b = []byte{}
		}
		out = append(out, wtChange{path: p, content: b})
	}
	return out, nil
}

// applyWorkTree writes and deletes the changed paths and their index
// entries. Each file is replaced by rename, so a reader (a sandbox) sees
// either the old or the new content of a file, never a mix.
func (g *Gate) applyWorkTree(wt []wtChange) error {
	var writes []change
	var dels []string
	for _, c := range wt {
		if c.content == nil {
			dels = append(dels, c.path)
		} else {
			writes = append(writes, change{Path: c.path, Content: c.content})
		}
	}
	if len(dels) > 0 {
		if err := g.repo.RemovePaths(dels); err != nil {
			return err
		}
	}
	if len(writes) > 0 {
		return g.repo.Checkout(writes)
	}
	return nil
}

// replay rebuilds the gate's commits above base (local, newest first) on
// the remote tip R, then moves the local branch from L to the result.
func (g *Gate) replay(st *syncFile, lb repo.RefName, L, R, base repo.Hash, local []repo.Hash, rawURL string) error {
	onRemote, err := g.draftsBetween(R, base)
	if err != nil {
		return err
	}
	tip := R
	remap, paths, held := map[string]string{}, map[string]string{}, map[string]syncHold{}
	replayed, skipped, dropped := 0, 0, 0
	for i := len(local) - 1; i >= 0; i-- {
		com, err := g.repo.Commit(local[i])
		if err != nil {
			return err
		}
		if com.NumParents() != 1 {
			return fmt.Errorf("local commit %s is a merge or a root: the gate replays only its own linear commits", com.Hash.String()[:12])
		}
		id := trailer.Value(com.Message, TrailerDraft)
		if id != "" {
			if at, ok := onRemote[id]; ok {
				// Not this gate's commit: it never pushed this one
				// (syncguard.go).
				return g.forgedPromotion(id, at, com.Hash, rawURL)
			}
		}
		if id != "" {
			// Judged again on the remote tip: the later of two notes of
			// one name is held, never replayed beside it (synchold.go).
			h, err := g.replayContradicts(com, tip)
			if err != nil {
				return err
			}
			if h != nil {
				held[id] = *h
				continue
			}
		}
		ch, msg, newPath, err := g.replayChanges(com, tip)
		if errors.Is(err, errReplayConflict) && id == "" {
			dropped++
			g.log.Warn("lifecycle commit not replayed (the remote changed the same note); the next sweep re-derives it", "commit", com.Hash.String(), "err", err)
			g.note("sync-dropped", map[string]string{"commit": com.Hash.String(), "reason": err.Error()})
			continue
		}
		if err != nil {
			return fmt.Errorf("replay %s (draft %q) on the remote tip %s: %w; the promotion stays local until this is resolved", com.Hash.String()[:12], id, tip.String()[:12], err)
		}
		if len(ch) == 0 {
			skipped++
			if id != "" {
				remap[id] = tip.String()
			}
			continue
		}
		h, err := g.writeCommitOn(tip, ch, com, msg)
		if err != nil {
			return err
		}
		tip = h
		replayed++
		if id != "" {
			remap[id] = h.String()
			if newPath != "" {
				paths[id] = newPath
			}
		}
	}
	if _, err := g.workTreeChanges(L, tip, tip); err != nil {
		return err
	}
	in := syncIntent{Kind: "replay", Old: L.String(), New: tip.String(), Remap: remap, Paths: paths, Held: held}
	if err := g.syncIntent().Record(in); err != nil {
		return err
	}
	if err := g.repo.CASRef(lb, L, tip); err != nil {
		g.syncIntent().Done()
		return err
	}
	syncFault("replayed")
	st.Replayed += replayed
	st.Skipped += skipped
	st.Dropped += dropped
	g.note("sync-replay", map[string]any{"from": L.String(), "onto": R.String(), "to": tip.String(), "replayed": replayed, "skipped": skipped, "dropped": dropped, "held": len(held)})
	g.log.Info("replayed", "onto", R.String(), "to", tip.String(), "replayed", replayed, "skipped", skipped, "dropped", dropped)
	return g.finishSyncIntent(st)
}

// draftsBetween maps the Fedmem-Draft ids of the commits from tip back to
// (not including) base to their commits.
func (g *Gate) draftsBetween(tip, base repo.Hash) (map[string]repo.Hash, error) {
	out := map[string]repo.Hash{}
	for c, i := tip, 0; !c.IsZero() && c != base && i < maxRecoveryWalk; i++ {
		com, err := g.repo.Commit(c)
		if err != nil {
			return nil, err
		}
		if id := trailer.Value(com.Message, TrailerDraft); id != "" {
			if _, dup := out[id]; !dup {
				out[id] = c
			}
		}
		if com.NumParents() == 0 {
			break
		}
		c = com.ParentHashes[0]
	}
	return out, nil
}

// isPage: a folder's log.md or index.md, which the gate only appends to.
func isPage(p string) (header string, ok bool) {
	switch path.Base(p) {
	case "log.md":
		return logHeader, true
	case "index.md":
		return indexHeader, true
	}
	return "", false
}

// replayChanges computes the files commit com changes, applied on tip
// instead of its parent. A file the remote left as the parent had it takes
// com's content; a page (log.md, index.md) both changed takes the remote's
// content plus the lines com appended (once); a note path the remote has
// since filled with other content moves to a free path (newPath), and the
// page lines and commit message follow it. Anything else is a conflict.
func (g *Gate) replayChanges(com *repo.Commit, tip repo.Hash) (out []change, msg, newPath string, err error) {
	parent := com.ParentHashes[0]
	chs, err := g.repo.Diff(parent, com.Hash)
	if err != nil {
		return nil, "", "", err
	}
	msg = com.Message
	notePath := trailer.Value(com.Message, TrailerPath)
	var oldBase, newBase string
	if notePath != "" {
		ours, err1 := g.repo.WholeFileAt(com.Hash, notePath)
		theirs, err2 := g.repo.WholeFileAt(tip, notePath)
		base, err3 := g.repo.WholeFileAt(parent, notePath)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, "", "", err
		}
		if base == nil && theirs != nil && !bytes.Equal(theirs, ours) {
			np, err := g.allocPath(tip, notePath, trailer.Value(com.Message, TrailerDraft), trailer.Value(com.Message, TrailerSHA256))
			if err != nil {
				return nil, "", "", fmt.Errorf("%w: %v", errReplayConflict, err)
			}
			if path.Dir(np) != path.Dir(notePath) {
				return nil, "", "", fmt.Errorf("%w: %s is taken on the remote and no free name is left in its folder", errReplayConflict, notePath)
			}
			newPath, oldBase, newBase = np, path.Base(notePath), path.Base(np)
			msg = strings.ReplaceAll(msg, "promote "+notePath, "promote "+np)
			msg = strings.ReplaceAll(msg, TrailerPath+": "+notePath, TrailerPath+": "+np)
		}
	}
	for _, ch := range chs {
		p := ch.To
		if p == "" {
			return nil, "", "", fmt.Errorf("%w: %s deletes %s", errReplayConflict, com.Hash.String()[:12], ch.From)
		}
		if ch.ToMode != repo.ModeRegular {
			return nil, "", "", fmt.Errorf("%w: %s is not a regular file", errReplayConflict, p)
		}
		ours, err1 := g.repo.WholeFileAt(com.Hash, p)
		base, err2 := g.repo.WholeFileAt(parent, p)
		target := p
		if newPath != "" && p == notePath {
			target = newPath
			base = nil
		}
		theirs, err3 := g.repo.WholeFileAt(tip, target)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, "", "", err
		}
		header, page := isPage(p)
		if page && oldBase != "" && path.Dir(p) == path.Dir(notePath) {
			ours = bytes.ReplaceAll(ours, []byte("]("+oldBase+")"), []byte("]("+newBase+")"))
		}
		switch {
		case bytes.Equal(theirs, ours):
			continue
		case bytes.Equal(theirs, base):
			out = append(out, change{Path: target, Content: ours})
			continue
		case !page:
			return nil, "", "", fmt.Errorf("%w: the remote changed %s too", errReplayConflict, p)
		}
		var added []byte
		switch {
		case base != nil && bytes.HasPrefix(ours, base):
			added = ours[len(base):]
		case base == nil && bytes.HasPrefix(ours, []byte(header)):
			added = ours[len(header):]
		default:
			return nil, "", "", fmt.Errorf("%w: %s was rewritten, not appended to (page rolled over?)", errReplayConflict, p)
		}
		added = bytes.TrimLeft(added, "\n")
		if theirs == nil {
			if base != nil {
				return nil, "", "", fmt.Errorf("%w: the remote removed %s", errReplayConflict, p)
			}
			theirs = []byte(header)
		}
		if len(added) == 0 || bytes.Contains(theirs, added) {
			continue
		}
		merged := append([]byte{}, theirs...)
		if len(merged) > 0 && merged[len(merged)-1] != '\n' {
			merged = append(merged, '\n')
		}
		out = append(out, change{Path: target, Content: append(merged, added...)})
	}
	return out, msg, newPath, nil
}

// writeCommitOn writes blobs, trees and a commit with orig's author,
// committer and msg on parent, without moving any ref (the replay moves the
// branch once, at the end). Signed like every gate commit when a key is set.
func (g *Gate) writeCommitOn(parent repo.Hash, changes []change, orig *repo.Commit, msg string) (repo.Hash, error) {
	c, err := g.repo.Commit(parent)
	if err != nil {
		return repo.ZeroHash, err
	}
	root := c.TreeHash
	for _, ch := range changes {
		blob, err := g.repo.WriteBlob(ch.Content)
		if err != nil {
			return repo.ZeroHash, err
		}
		if root, err = g.repo.PutPath(root, strings.Split(ch.Path, "/"), blob); err != nil {
			return repo.ZeroHash, fmt.Errorf("write tree for %s: %w", ch.Path, err)
		}
	}
	return g.repo.WriteCommit(root, []repo.Hash{parent}, orig.Author, orig.Committer, msg)
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
		if !validClaimID(id) {
			continue
		}
		d, err := g.loadDecision(id)
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
func (g *Gate) recheckPending(st *syncFile, head repo.Hash) {
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

// fillCounts sets Head, Ahead and Behind from the repository.
func (g *Gate) fillCounts(s *SyncStatus) {
	_, head, err := g.repo.Head()
	if err != nil {
		return
	}
	s.Head = head.String()
	if s.Branch == "" {
		return
	}
	rh, _, _ := g.repo.Ref(repo.TrackRef(syncRemoteName, s.Branch))
	s.RemoteHead = rh.String()
	if rh.IsZero() {
		s.RemoteHead = ""
	}
	if _, a, b, err := g.repo.MergeBase(head, rh, maxRecoveryWalk); err == nil {
		s.Ahead, s.Behind = len(a), len(b)
	}
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
	var st syncFile
	if err := durable.ReadJSON(filepath.Join(stateDir, syncStateFile), &st); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	pol, perr := policy.Load(filepath.Join(dir, filepath.FromSlash(vault.PolicyFile)))
	if perr == nil {
		st.Configured = pol.Remote != nil
		if pol.Remote != nil {
			st.Remote = redactURL(pol.Remote.URL)
			if pol.Remote.Branch != "" {
				st.Branch = pol.Remote.Branch
			}
		}
	}
	// Read-only: not openRepo, which cleans up after a killed gate.
	r, err := repo.OpenReadOnly(dir)
	if err != nil {
		return &st.SyncStatus, nil
	}
	g := &Gate{vaultDir: dir, repo: r}
	lb, _, err := r.Head()
	if err == nil && st.Branch == "" {
		st.Branch = lb.Short()
	}
	if err == nil {
		st.LocalBranch = lb.Short()
	}
	g.fillCounts(&st.SyncStatus)
	return &st.SyncStatus, nil
}

// redactURL drops the user information (and anything after it that is not
// the host and path) of a remote URL for display.
func redactURL(s string) string {
	if strings.Contains(s, "://") {
		u, err := url.Parse(s)
		if err != nil {
			return "<unparsable remote URL>"
		}
		u.User, u.RawQuery, u.Fragment = nil, "", ""
		return u.String()
	}
	if at := strings.Index(s, "@"); at >= 0 {
		return s[at+1:]
	}
	return s
}

var userinfoRe = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]+@`)

// redactErr is err's text with the raw URL and any user information
// removed.
func redactErr(err error, rawURL string) string {
	s := err.Error()
	if rawURL != "" {
		s = strings.ReplaceAll(s, rawURL, redactURL(rawURL))
	}
	return userinfoRe.ReplaceAllString(s, "$1")
}
