package commit

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/durable"
	"github.com/fedmem/fedmem/gate/origin"
	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/gate/record"
	"github.com/fedmem/fedmem/gate/trailer"
	"github.com/fedmem/fedmem/gate/validate"
	"github.com/fedmem/fedmem/vault/note"
	"github.com/fedmem/fedmem/vault/repo"
)

// Dir holds one marker per draft whose promotion commit may be on
// the branch without a recorded decision: committing/ID holds the commit the
// promotion was built on. In a pass's group commit one marker covers the
// group, committing/G-<id>.json (groupcommit.go). It is written (synced) before the branch moves and
// removed once the decision is recorded, so after a kill -9 the gate looks
// for the draft's commit (by its Fedmem-Draft trailer) only where one can be,
// between HEAD and that parent.
const Dir = "committing"

// maxRecoveryWalk bounds the walk from HEAD back to a marker's parent.
const maxRecoveryWalk = 100000

// Promote is the one promotion path. Auto-promotion (reviewer "") and
// a reviewer's approval both come here: render the note from the validated
// draft and the verdict, find it a free path, write it with the index and
// log lines (and deprecate what it supersedes), commit with the trailers,
// publish with a compare-and-swap and check the files out. If an earlier
// run committed this draft (same claim id) and was killed before recording
// the decision, that commit is adopted instead of committing again, whoever
// calls now.
func (e *Engine) Promote(pol *policy.Policy, d *record.Decision, res validate.Result, v decide.Verdict, o origin.Origin, reviewer string) error {
	branch, head, err := e.repo.Head()
	if err != nil {
		return err
	}
	if done, err := e.AdoptEarlierCommit(head, d); err != nil || done {
		return err
	}
	verifiedBy := decide.GateActor
	if reviewer != "" {
		verifiedBy = "human:" + reviewer
	}
	content, err := decide.Render(res.Note, pol, v, decide.Provenance{Session: d.Session, Origin: o}, d.FirstSeen, verifiedBy)
	if err != nil {
		return err
	}
	dest, err := e.AllocPath(head, decide.DestPath(v.Folder, res.Meta.Title, d.Draft, d.SHA256), d.ID, d.SHA256)
	if err != nil {
		return err
	}
	d.Path = dest
	cs := NewChangeSet(e.repo, head)
	cs.Set(dest, content)
	if err := cs.NotePromoted(dest, res.Meta.Title, d, e.now()); err != nil {
		return err
	}
	for _, ref := range res.Meta.Supersedes {
		target := path.Clean(strings.TrimPrefix(ref.Value, "/"))
		if target == dest {
			// The note's own path (predictable from folder and title; it
			// was free, so the draft was held as supersedes-missing): a
			// note does not supersede itself, and rewriting it here would
			// commit bytes CheckCommit below never sees
			// (TestSupersedesOwnPathNotSelfDeprecated).
			continue
		}
		old, err := cs.Get(target)
		if err != nil || old == nil {
			continue
		}
		if upd, ok := deprecate(old, dest); ok {
			cs.Set(target, upd)
			if err := cs.NoteSuperseded(target, dest, e.now()); err != nil {
				return err
			}
		}
	}
	changes := cs.List()
	msg := e.commitMessage(d, o, dest, reviewer)
	// Scan what is committed (H3, issue 7): the rendered note is parsed
	// again and every content check runs on it, its path and this message;
	// an Error refuses the commit with a *validate.RefusedError.
	// The other files of the changeset (log.md, index.md, a superseded
	// note) are scanned on what they add to HEAD's.
	var others []validate.Blob
	for _, c := range changes {
		if c.Path == dest {
			continue
		}
		old, err := cs.AtHead(c.Path)
		if err != nil {
			return err
		}
		others = append(others, validate.Blob{Path: c.Path, Old: old, New: c.Content})
	}
	if err := validate.CheckCommit(content, dest, msg, others...); err != nil {
		return err
	}
	if !e.markInGroup(d.ID) {
		if err := durable.WriteAtomic(e.statePath(Dir, d.ID), []byte(e.repo.MarkerBase(head).String()), 0o600); err != nil {
			return err
		}
	}
	if !e.repo.Batching() {
		// Committed on its own (a review): its files are journaled before
		// the branch moves, as a group's are at its flush, so that a kill
		// between the move and the index write is repaired at Open
		// (checkoutjournal.go). In a group the flush journals them.
		var paths []string
		for _, c := range changes {
			paths = append(paths, c.Path)
		}
		if err := e.journalPaths(paths); err != nil {
			return err
		}
	}
	h, err := e.repo.CommitChanges(branch, head, changes, e.host.Signature(pol), msg)
	if err != nil {
		return err
	}
	d.State, d.Commit = decide.StatePromoted, h.String()
	data := map[string]string{"id": d.ID, "commit": d.Commit, "path": dest, "sha256": d.SHA256, "origin": o.String()}
	if reviewer != "" {
		data["reviewer"] = reviewer
	}
	if _, err := e.audit.Append("commit", data); err != nil {
		return err
	}
	e.log.Info("committed", "id", d.ID, "commit", d.Commit, "path", dest, "reviewer", reviewer)
	if err := e.repo.Checkout(changes); err != nil {
		return err
	}
	if !e.repo.Batching() {
		e.checkoutDone()
	}
	return nil
}

// commitMessage names the draft, session and decision in trailers. The
// draft's file name is not in it (it is the agent's text); the id is.
func (e *Engine) commitMessage(d *record.Decision, o origin.Origin, dest, reviewer string) string {
	var b strings.Builder
	if reviewer != "" {
		fmt.Fprintf(&b, "fedmem: promote %s (approved by %s)\n\nDraft %s from session %s, approved by a reviewer.\n\n", dest, reviewer, d.ID, decide.SanitizeLine(d.Session))
	} else {
		fmt.Fprintf(&b, "fedmem: promote %s\n\nDraft %s from session %s, promoted by the gate (trusted origin, evidence held).\n\n", dest, d.ID, decide.SanitizeLine(d.Session))
	}
	tr := func(k, v string) { fmt.Fprintf(&b, "%s: %s\n", k, decide.SanitizeLine(v)) }
	tr(trailer.Draft, d.ID)
	tr(trailer.Session, d.Session)
	tr(trailer.SHA256, d.SHA256)
	tr(trailer.Decision, decide.StatePromoted)
	tr(trailer.Path, dest)
	tr(trailer.Origin, o.String())
	if reviewer != "" {
		tr(trailer.Reviewer, reviewer)
	}
	// The audit head at commit time anchors the log's end outside the
	// gate's state (`fedmem audit verify` cross-checks it).
	tr(trailer.AuditHead, e.audit.Head())
	return b.String()
}

// AdoptEarlierCommit finds this draft's commit when a marker says one may
// exist (see Dir). Found: the decision takes that commit (its
// path, and its reviewer if it was an approval), and the files it changed
// are brought to HEAD in the work tree and index. done reports whether the
// draft is already promoted.
func (e *Engine) AdoptEarlierCommit(head repo.Hash, d *record.Decision) (done bool, err error) {
	b, err := os.ReadFile(e.statePath(Dir, d.ID))
	var base repo.Hash
	switch {
	case errors.Is(err, os.ErrNotExist):
		// A group's promotions share one marker (groupcommit.go).
		var ok bool
		if base, ok, err = e.groupBase(d.ID); err != nil || !ok {
			return false, err
		}
	case err != nil:
		return false, err
	default:
		base = repo.NewHash(strings.TrimSpace(string(b)))
	}
	for c, i := head, 0; !c.IsZero() && c != base && i < maxRecoveryWalk; i++ {
		com, err := e.repo.Commit(c)
		if err != nil {
			return false, fmt.Errorf("recovery walk: %w", err)
		}
		if trailer.Value(com.Message, trailer.Draft) == d.ID {
			d.State, d.Commit = decide.StatePromoted, c.String()
			d.Path = trailer.Value(com.Message, trailer.Path)
			d.Origin = trailer.Value(com.Message, trailer.Origin)
			d.Reviewer = trailer.Value(com.Message, trailer.Reviewer)
			paths, err := e.changedPaths(com)
			if err != nil {
				return false, err
			}
			var ch []repo.Change
			for _, p := range paths {
				cur, err := e.repo.FileAt(head, p)
				if err != nil {
					return false, err
				}
				if cur != nil {
					ch = append(ch, repo.Change{Path: p, Content: cur})
				}
			}
			e.log.Info("adopted earlier commit", "id", d.ID, "commit", d.Commit)
			if e.pass != nil && e.repo.Batching() {
				// The checkout waits for the group's flush; so does the
				// decision (DeferFinish).
				e.pass.adopted[d.ID] = true
			}
			return true, e.repo.Checkout(ch)
		}
		if com.NumParents() == 0 {
			break
		}
		c = com.ParentHashes[0]
	}
	return false, nil
}

// changedPaths lists the files a commit changed against its first parent.
func (e *Engine) changedPaths(com *repo.Commit) ([]string, error) { return e.repo.ChangedPaths(com) }

// AllocPath returns a path at head that no file holds: the title's slug,
// then -2 … -5, then names made unique by the claim id and the content
// hash. However many drafts share a title, the allocation ends in a path
// (no draft is left without a decision because others squat its name).
func (e *Engine) AllocPath(head repo.Hash, want, id, sum string) (string, error) {
	base := strings.TrimSuffix(want, ".md")
	cands := []string{base + ".md"}
	for i := 2; i <= 5; i++ {
		cands = append(cands, fmt.Sprintf("%s-%d.md", base, i))
	}
	idSlug := decide.CleanSlug(id)
	if j := strings.LastIndexByte(id, '-'); j >= 0 {
		cands = append(cands, base+"-"+decide.CleanSlug(id[j+1:])+".md")
	}
	cands = append(cands, base+"-"+idSlug+".md")
	if len(sum) >= 64 {
		cands = append(cands, path.Dir(base)+"/note-"+sum[:64]+"-"+idSlug+".md")
	}
	for _, c := range cands {
		old, err := e.repo.FileAt(head, c)
		if err != nil {
			return "", err
		}
		if old == nil {
			return c, nil
		}
	}
	return "", fmt.Errorf("every candidate path for %s is taken, including ones named after claim %s (not a name an agent can predict): the vault holds files the gate did not write", want, id)
}

// deprecate marks a note superseded: status deprecated, superseded_by dest.
func deprecate(old []byte, dest string) ([]byte, bool) {
	n, _ := note.Parse(old)
	if n == nil {
		return nil, false
	}
	set := func(k, v string) {
		for i := 0; i+1 < len(n.Front.Content); i += 2 {
			if n.Front.Content[i].Value == k {
				n.Front.Content[i+1] = decide.Str(v)
				return
			}
		}
		n.Front.Content = append(n.Front.Content, decide.Str(k), decide.Str(v))
	}
	set("status", note.StatusDeprecated)
	set("superseded_by", dest)
	b, err := note.Render(n.Front, n.Body)
	return b, err == nil
}
