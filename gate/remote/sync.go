// Package remote syncs the vault with a remote branch (issue 12;
// docs/multi-machine.md). With `remote: {url, branch}` in the policy,
// every pass ends with a sync of the vault's branch with the remote branch:
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
//     (guard.go), as is a remote tip that does not contain the last
//     commit this gate published.
//
// Every step that moves the local branch writes sync.intent (state dir)
// first, so a gate killed at any point finishes the work tree, the
// decisions' commit ids and the audit on its next pass; a push is atomic on
// the server, so a kill mid-push leaves the remote either before or after
// it, and the next pass sees which. Nothing of the remote's URL beyond what
// the policy says is stored; credentials stay with the gate user's Git
// credential helpers and SSH keys; URLs are redacted in every message.
package remote

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/fedmem/fedmem/gate/durable"
	"github.com/fedmem/fedmem/gate/trailer"
	"github.com/fedmem/fedmem/vault"
	"github.com/fedmem/fedmem/vault/note"
	"github.com/fedmem/fedmem/vault/repo"
)

// walkBound bounds a first-parent walk (the merge base, the remote's
// draft ids), as the gate's recovery walk is bounded.
const walkBound = 100000

// Hold is one local promotion not replayed (it contradicts a note in
// force on the remote tip), recorded in the sync intent so a gate killed
// after the branch moved still holds it.
type Hold struct {
	Path    string         `json:"path"`
	Reasons []note.Finding `json:"reasons"`
	Draft   []byte         `json:"draft"`
}

// Host is what a sync needs of the gate: its audit log, a free path for a
// replayed note, the judgement of a replayed promotion against the remote
// tip, and the decisions' side of a branch move.
type Host interface {
	// Note appends an audit entry.
	Note(kind string, data any)
	// AllocPath returns a path at tip that no file holds, from want.
	AllocPath(tip repo.Hash, want, id, sum string) (string, error)
	// Contradicts judges local promotion com against tip: nil when it may
	// be replayed, else the hold to record.
	Contradicts(com *repo.Commit, tip repo.Hash) (*Hold, error)
	// Moved is called once the branch moved and the work tree matches
	// head: remap (draft id → commit) and paths (draft id → new path) of
	// replayed promotions, held the promotions not replayed; the host
	// also judges its held drafts again and sets st.Flagged.
	Moved(st *File, head repo.Hash, remap, paths map[string]string, held map[string]Hold)
}

// Engine syncs one vault's branch with a remote branch.
type Engine struct {
	repo     *repo.Repo
	log      *slog.Logger
	now      func() time.Time
	state    string
	host     Host
	deadline *Deadline
	fault    func(point string)
	pages    map[string]string
}

// Config is what New needs: the repository, the gate's log and clock, its
// state dir (sync.json, sync.intent), the host, the deadline of remote
// operations, a test hook called at named points (nil: none), and the
// headers of the append-only pages by file name (log.md, index.md).
type Config struct {
	Repo     *repo.Repo
	Log      *slog.Logger
	Now      func() time.Time
	State    string
	Host     Host
	Deadline *Deadline
	Fault    func(point string)
	Pages    map[string]string
}

// New makes an Engine.
func New(c Config) *Engine {
	e := &Engine{repo: c.Repo, log: c.Log, now: c.Now, state: c.State, host: c.Host, deadline: c.Deadline, fault: c.Fault, pages: c.Pages}
	if e.fault == nil {
		e.fault = func(string) {}
	}
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.deadline == nil {
		e.deadline = &Deadline{}
	}
	return e
}

func (e *Engine) statePath(parts ...string) string {
	return filepath.Join(append([]string{e.state}, parts...)...)
}

// LoadFile reads sync.json (a fresh File when there is none or it does not
// parse: then logged).
func (e *Engine) LoadFile() *File {
	var st File
	if err := durable.ReadJSON(e.statePath(StateFile), &st); err != nil && !errors.Is(err, os.ErrNotExist) {
		e.log.Warn("sync state unreadable; starting afresh", "err", err)
		st = File{}
	}
	return &st
}

// SaveFile writes sync.json.
func (e *Engine) SaveFile(st *File) error { return durable.WriteJSON(e.statePath(StateFile), st) }

const (
	// StateFile (state dir) holds the last sync's outcome and the remote
	// last configured (used when the policy in the work tree does not parse,
	// so that a fix pushed to the remote can still arrive).
	StateFile = "sync.json"
	// intentFile names a branch move in progress (see finishSyncIntent).
	intentFile = "sync.intent"
	// remoteName names the anonymous remote; it is never written to
	// .git/config (which sandboxes can read).
	remoteName = "fedmem"
	// syncAttempts bounds fetch/replay/push rounds per pass when the remote
	// keeps moving; the next pass tries again.
	syncAttempts = 5
	// maxRecheck bounds the held drafts judged again after one remote move.
	maxRecheck = 500
)

// Status is the state of remote sync, as `fedmem gate status` and
// `fedmem doctor --vault` show it. Fields are only ever added.
type Status struct {
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

// File is sync.json: the last sync's status and the remote last configured.
type File struct {
	Status
	// URL is the remote as the policy last named it (no secrets: the
	// policy refuses them). Kept in the gate-private state dir only.
	URL        string `json:"url,omitempty"`
	ConfBranch string `json:"conf_branch,omitempty"`
}

// intent is sync.intent: a branch move in progress.
type intent struct {
	Kind string `json:"kind"` // fast-forward | replay
	Old  string `json:"old"`
	New  string `json:"new"`
	// Remap: draft id → the commit now holding its promotion; Paths: draft
	// id → its new path when the replay had to move the note.
	Remap map[string]string `json:"remap,omitempty"`
	Paths map[string]string `json:"paths,omitempty"`
	// Held: draft id → a local promotion not replayed because it
	// contradicts a note in force on the remote (synchold.go).
	Held map[string]Hold `json:"held,omitempty"`
}

// errReplayConflict: a local commit cannot be replayed on the remote tip.
var errReplayConflict = errors.New("replay conflict")

// Run syncs the vault's branch with branch rbranch of the remote at rawURL
// (the branch HEAD names when rbranch is ""), recording what it saw in st.
func (e *Engine) Run(st *File, rawURL, rbranch string) error {
	if err := e.finishSyncIntent(st); err != nil {
		return fmt.Errorf("finish interrupted sync: %w", err)
	}
	lb, _, err := e.repo.Head()
	if err != nil {
		return err
	}
	if rbranch == "" {
		rbranch = lb.Short()
	}
	st.Branch, st.LocalBranch = rbranch, lb.Short()
	rem := e.repo.Remote(remoteName, rawURL, rbranch, e.deadline.Do)
	for attempt := 0; attempt < syncAttempts; attempt++ {
		R, err := rem.Fetch()
		if err != nil {
			return fmt.Errorf("fetch: %w", err)
		}
		st.LastFetch = e.now().UTC()
		st.RemoteHead = R.String()
		if err := e.checkPublished(st, R, rawURL, rbranch); err != nil {
			return err
		}
		lb, L, err := e.repo.Head()
		if err != nil {
			return err
		}
		if R == L {
			return nil
		}
		base, local, _, err := e.repo.MergeBase(L, R, walkBound)
		if err != nil {
			return err
		}
		switch {
		case base == R || R.IsZero():
			e.fault("before-push")
			perr := rem.Push(lb, R)
			if perr == nil {
				e.fault("after-push")
				st.LastPush = e.now().UTC()
				st.Pushes++
				st.Published, st.PublishedTo = L.String(), RedactURL(rawURL)+" "+rbranch
				st.RemoteHead = L.String()
				_ = rem.Tracked(L)
				e.host.Note("sync-push", map[string]any{"remote": RedactURL(rawURL), "branch": rbranch, "from": R.String(), "to": L.String(), "commits": len(local)})
				e.log.Info("pushed", "remote", RedactURL(rawURL), "to", L.String(), "commits", len(local))
				return nil
			}
			// The remote moved between fetch and push (the CAS failed):
			// fetch again and replay. Anything else is the error.
			if R2, ferr := rem.Fetch(); ferr == nil && R2 != R {
				continue
			}
			return fmt.Errorf("push %d commit(s) to %s: %w", len(local), rbranch, perr)
		case base == L:
			if err := e.fastForward(st, lb, L, R); err != nil {
				return fmt.Errorf("fast-forward to %s: %w", R.String()[:12], err)
			}
			return nil
		default:
			if err := e.replay(st, lb, L, R, base, local, rawURL); err != nil {
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
func (e *Engine) fastForward(st *File, lb repo.RefName, L, R repo.Hash) error {
	if _, err := e.workTreeChanges(L, R, R); err != nil {
		return err
	}
	if err := e.intent().Record(intent{Kind: "fast-forward", Old: L.String(), New: R.String()}); err != nil {
		return err
	}
	if err := e.repo.CASRef(lb, L, R); err != nil {
		e.intent().Done()
		return err
	}
	e.fault("ff-moved")
	e.host.Note("sync-fast-forward", map[string]string{"from": L.String(), "to": R.String()})
	e.log.Info("fast-forwarded", "from", L.String(), "to", R.String())
	return e.finishSyncIntent(st)
}

// finishSyncIntent completes a branch move recorded in sync.intent: the
// paths that differ between Old and New are written from the current HEAD
// (later gate commits may have changed some again), the decisions of
// replayed promotions get their new commit ids (and paths), held drafts are
// judged again against HEAD, and the intent is removed. If the branch never
// left Old, the intent is dropped.
func (e *Engine) intent() durable.Intent { return durable.Intent(e.statePath(intentFile)) }

func (e *Engine) finishSyncIntent(st *File) error {
	var in intent
	if ok, err := e.intent().Load(&in); !ok {
		return err
	}
	_, head, err := e.repo.Head()
	if err != nil {
		return err
	}
	oldH, newH := repo.NewHash(in.Old), repo.NewHash(in.New)
	if head == oldH {
		return e.intent().Done()
	}
	if head != newH {
		if base, _, _, err := e.repo.MergeBase(head, newH, walkBound); err != nil || base != newH {
			e.log.Warn("sync intent names a commit HEAD does not contain; dropped", "new", in.New)
			return e.intent().Done()
		}
	}
	wt, err := e.workTreeChanges(oldH, newH, head)
	if err != nil {
		return err
	}
	if err := e.applyWorkTree(wt); err != nil {
		return err
	}
	e.host.Moved(st, head, in.Remap, in.Paths, in.Held)
	return e.intent().Done()
}

// wtChange is one path of the work tree to bring to a commit.
type wtChange struct {
	path    string
	content []byte // nil: delete
}

// PathError says why the gate will not write p into its work tree from a
// remote commit, or "".
func PathError(p string) string {
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
func (e *Engine) workTreeChanges(from, to, at repo.Hash) ([]wtChange, error) {
	chs, err := e.repo.Diff(from, to)
	if err != nil {
		return nil, err
	}
	var out []wtChange
	for _, ch := range chs {
		p := ch.To
		if p == "" {
			p = ch.From
		}
		if why := PathError(p); why != "" {
			return nil, fmt.Errorf("remote path %q %s", p, why)
		}
		ent, err := e.repo.EntryAt(at, p)
		if err != nil {
			return nil, err
		}
		if ent == nil {
			out = append(out, wtChange{path: p})
			continue
		}
		if ent.Mode != repo.ModeRegular && ent.Mode != repo.ModeExecutable && ent.Mode != repo.ModeDeprecated {
			return nil, fmt.Errorf("remote path %q is a %s; the gate checks out regular files only", p, repo.ModeName(ent.Mode))
		}
		b, err := e.repo.WholeFileAt(at, p)
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
func (e *Engine) applyWorkTree(wt []wtChange) error {
	var writes []repo.Change
	var dels []string
	for _, c := range wt {
		if c.content == nil {
			dels = append(dels, c.path)
		} else {
			writes = append(writes, repo.Change{Path: c.path, Content: c.content})
		}
	}
	if len(dels) > 0 {
		if err := e.repo.RemovePaths(dels); err != nil {
			return err
		}
	}
	if len(writes) > 0 {
		return e.repo.Checkout(writes)
	}
	return nil
}

// replay rebuilds the gate's commits above base (local, newest first) on
// the remote tip R, then moves the local branch from L to the result.
func (e *Engine) replay(st *File, lb repo.RefName, L, R, base repo.Hash, local []repo.Hash, rawURL string) error {
	onRemote, err := e.draftsBetween(R, base)
	if err != nil {
		return err
	}
	tip := R
	remap, paths, held := map[string]string{}, map[string]string{}, map[string]Hold{}
	replayed, skipped, dropped := 0, 0, 0
	for i := len(local) - 1; i >= 0; i-- {
		com, err := e.repo.Commit(local[i])
		if err != nil {
			return err
		}
		if com.NumParents() != 1 {
			return fmt.Errorf("local commit %s is a merge or a root: the gate replays only its own linear commits", com.Hash.String()[:12])
		}
		id := trailer.Value(com.Message, trailer.Draft)
		if id != "" {
			if at, ok := onRemote[id]; ok {
				// Not this gate's commit: it never pushed this one
				// (syncguard.go).
				return e.forgedPromotion(id, at, com.Hash, rawURL)
			}
		}
		if id != "" {
			// Judged again on the remote tip: the later of two notes of
			// one name is held, never replayed beside it (synchold.go).
			h, err := e.host.Contradicts(com, tip)
			if err != nil {
				return err
			}
			if h != nil {
				held[id] = *h
				continue
			}
		}
		ch, msg, newPath, err := e.replayChanges(com, tip)
		if errors.Is(err, errReplayConflict) && id == "" {
			dropped++
			e.log.Warn("lifecycle commit not replayed (the remote changed the same note); the next sweep re-derives it", "commit", com.Hash.String(), "err", err)
			e.host.Note("sync-dropped", map[string]string{"commit": com.Hash.String(), "reason": err.Error()})
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
		h, err := e.writeCommitOn(tip, ch, com, msg)
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
	if _, err := e.workTreeChanges(L, tip, tip); err != nil {
		return err
	}
	in := intent{Kind: "replay", Old: L.String(), New: tip.String(), Remap: remap, Paths: paths, Held: held}
	if err := e.intent().Record(in); err != nil {
		return err
	}
	if err := e.repo.CASRef(lb, L, tip); err != nil {
		e.intent().Done()
		return err
	}
	e.fault("replayed")
	st.Replayed += replayed
	st.Skipped += skipped
	st.Dropped += dropped
	e.host.Note("sync-replay", map[string]any{"from": L.String(), "onto": R.String(), "to": tip.String(), "replayed": replayed, "skipped": skipped, "dropped": dropped, "held": len(held)})
	e.log.Info("replayed", "onto", R.String(), "to", tip.String(), "replayed", replayed, "skipped", skipped, "dropped", dropped)
	return e.finishSyncIntent(st)
}

// draftsBetween maps the Fedmem-Draft ids of the commits from tip back to
// (not including) base to their commits.
func (e *Engine) draftsBetween(tip, base repo.Hash) (map[string]repo.Hash, error) {
	out := map[string]repo.Hash{}
	for c, i := tip, 0; !c.IsZero() && c != base && i < walkBound; i++ {
		com, err := e.repo.Commit(c)
		if err != nil {
			return nil, err
		}
		if id := trailer.Value(com.Message, trailer.Draft); id != "" {
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
func (e *Engine) isPage(p string) (header string, ok bool) {
	header, ok = e.pages[path.Base(p)]
	return header, ok
}

// replayChanges computes the files commit com changes, applied on tip
// instead of its parent. A file the remote left as the parent had it takes
// com's content; a page (log.md, index.md) both changed takes the remote's
// content plus the lines com appended (once); a note path the remote has
// since filled with other content moves to a free path (newPath), and the
// page lines and commit message follow it. Anything else is a conflict.
func (e *Engine) replayChanges(com *repo.Commit, tip repo.Hash) (out []repo.Change, msg, newPath string, err error) {
	parent := com.ParentHashes[0]
	chs, err := e.repo.Diff(parent, com.Hash)
	if err != nil {
		return nil, "", "", err
	}
	msg = com.Message
	notePath := trailer.Value(com.Message, trailer.Path)
	var oldBase, newBase string
	if notePath != "" {
		ours, err1 := e.repo.WholeFileAt(com.Hash, notePath)
		theirs, err2 := e.repo.WholeFileAt(tip, notePath)
		base, err3 := e.repo.WholeFileAt(parent, notePath)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, "", "", err
		}
		if base == nil && theirs != nil && !bytes.Equal(theirs, ours) {
			np, err := e.host.AllocPath(tip, notePath, trailer.Value(com.Message, trailer.Draft), trailer.Value(com.Message, trailer.SHA256))
			if err != nil {
				return nil, "", "", fmt.Errorf("%w: %v", errReplayConflict, err)
			}
			if path.Dir(np) != path.Dir(notePath) {
				return nil, "", "", fmt.Errorf("%w: %s is taken on the remote and no free name is left in its folder", errReplayConflict, notePath)
			}
			newPath, oldBase, newBase = np, path.Base(notePath), path.Base(np)
			msg = strings.ReplaceAll(msg, "promote "+notePath, "promote "+np)
			msg = strings.ReplaceAll(msg, trailer.Path+": "+notePath, trailer.Path+": "+np)
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
		ours, err1 := e.repo.WholeFileAt(com.Hash, p)
		base, err2 := e.repo.WholeFileAt(parent, p)
		target := p
		if newPath != "" && p == notePath {
			target = newPath
			base = nil
		}
		theirs, err3 := e.repo.WholeFileAt(tip, target)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, "", "", err
		}
		header, page := e.isPage(p)
		if page && oldBase != "" && path.Dir(p) == path.Dir(notePath) {
			ours = bytes.ReplaceAll(ours, []byte("]("+oldBase+")"), []byte("]("+newBase+")"))
		}
		switch {
		case bytes.Equal(theirs, ours):
			continue
		case bytes.Equal(theirs, base):
			out = append(out, repo.Change{Path: target, Content: ours})
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
		out = append(out, repo.Change{Path: target, Content: append(merged, added...)})
	}
	return out, msg, newPath, nil
}

// writeCommitOn writes blobs, trees and a commit with orig's author,
// committer and msg on parent, without moving any ref (the replay moves the
// branch once, at the end). Signed like every gate commit when a key is set.
func (e *Engine) writeCommitOn(parent repo.Hash, changes []repo.Change, orig *repo.Commit, msg string) (repo.Hash, error) {
	c, err := e.repo.Commit(parent)
	if err != nil {
		return repo.ZeroHash, err
	}
	root := c.TreeHash
	for _, ch := range changes {
		blob, err := e.repo.WriteBlob(ch.Content)
		if err != nil {
			return repo.ZeroHash, err
		}
		if root, err = e.repo.PutPath(root, strings.Split(ch.Path, "/"), blob); err != nil {
			return repo.ZeroHash, fmt.Errorf("write tree for %s: %w", ch.Path, err)
		}
	}
	return e.repo.WriteCommit(root, []repo.Hash{parent}, orig.Author, orig.Committer, msg)
}

// FillCounts sets Head, Ahead and Behind from the repository.
func (e *Engine) FillCounts(s *Status) {
	_, head, err := e.repo.Head()
	if err != nil {
		return
	}
	s.Head = head.String()
	if s.Branch == "" {
		return
	}
	rh, _, _ := e.repo.Ref(repo.TrackRef(remoteName, s.Branch))
	s.RemoteHead = rh.String()
	if rh.IsZero() {
		s.RemoteHead = ""
	}
	if _, a, b, err := e.repo.MergeBase(head, rh, walkBound); err == nil {
		s.Ahead, s.Behind = len(a), len(b)
	}
}
