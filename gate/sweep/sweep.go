package sweep

// Withholding (OKF's fourth state). An active note — in force: status
// absent or stable — is withheld when its `stale_after` has passed or when a
// source it was fingerprinted against no longer has that blob id at HEAD.
// OKF v0.2 has no `withheld` status, so a withheld note gets
//
//	status: draft            # OKF: not in force; readers skip it
//	withheld:                # fedmem extension key, written by the gate
//	  at: 2026-11-29T20:00:00Z
//	  reason: stale | source-changed
//	  detail: "source 20-domains/x.md changed (git-blob:… → git-blob:…)"
//
// one gate commit per note, with an audit entry. Reverify restores it
// (status stable, `withheld` removed) when every fingerprinted source
// matches HEAD again and the type's verifiers pass.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/durable"
	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/gate/verify"
	"github.com/fedmem/fedmem/vault"
	"github.com/fedmem/fedmem/vault/note"
	"github.com/fedmem/fedmem/vault/repo"
	"github.com/fedmem/fedmem/vault/view"
)

// Withhold reasons.
const (
	WithholdStale         = "stale"
	WithholdSourceChanged = "source-changed"
)

// ErrNotWithheld is returned when reverify names a note that is not withheld.
var ErrNotWithheld = errors.New("not a withheld note")

// Withheld is one note a sweep withheld.
type Withheld struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
	Detail string `json:"detail"`
	Commit string `json:"commit"`
	// ReadBy are the sessions whose read receipt names the note (fedmem
	// audit readers): whoever acted on it may need a look. Unrecorded
	// counts the sessions with no receipt, which could have read it.
	ReadBy     []string `json:"read_by"`
	Unrecorded int      `json:"sessions_unrecorded,omitempty"`
}

// Summary is the result of one sweep. Fields are only ever added.
type Summary struct {
	Checked  int        `json:"checked"` // notes in force looked at
	Withheld []Withheld `json:"withheld"`
	Errors   []string   `json:"errors,omitempty"`
	// Sessions is what the sweep did with empty session folders in
	// 90-inbox/ (Host.PruneSessions).
	Sessions *SessionPrune `json:"sessions,omitempty"`
}

// ReverifyResult says whether a withheld note was restored, or what fails.
type ReverifyResult struct {
	Path     string               `json:"path"`
	Restored bool                 `json:"restored"`
	Commit   string               `json:"commit,omitempty"`
	Failures []string             `json:"failures,omitempty"`
	Verified []decide.VerifierRun `json:"verifiers,omitempty"`
}

// sweepSkip are never swept: the contract (a human changes it), the
// inbox and the archive are not memory in force.
var sweepSkip = map[string]bool{"00-global": true, vault.InboxDir: true, "99-archive": true}

// Skipped reports whether notes in the top-level folder top are never
// withheld.
func Skipped(top string) bool { return sweepSkip[top] }

// IntentFile, in the state dir, names the paths a withhold, restore or
// policy commit is about to change; a gate killed between the ref update
// and the work tree finishes the checkout on its next sweep.
const IntentFile = "sweep.intent"

// SessionPrune is what a sweep did with empty session folders under
// 90-inbox/ (the host prunes them: it owns the inbox). Fields are only ever
// added.
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
	// read receipt) the gate copied into its state and audit log.
	ReceiptsStored int      `json:"receipts_stored,omitempty"`
	Errors         []string `json:"errors,omitempty"`
}

// Host is what the engine needs from the gate.
type Host interface {
	// Note appends an audit entry (best effort: a recovered move).
	Note(kind string, data any)
	// Audit appends an audit entry; a failure fails the move.
	Audit(kind string, data map[string]string) error
	// Changes are the files a commit writing content at p against head
	// changes: p and, when logLine is not "", its folder's log.md with the
	// line appended (the gate's folder pages).
	Changes(head repo.Hash, p string, content []byte, logLine string) ([]repo.Change, error)
	// Signature is the gate's commit signature under pol.
	Signature(pol *policy.Policy) repo.Signature
	// PruneSessions removes the empty session folders whose grace period
	// passed (pol's), stores the ended sessions' records with their read
	// receipts, and records what it did.
	PruneSessions(pol *policy.Policy, now time.Time) *SessionPrune
	// ReadersOf names the sessions whose read receipt names the note p
	// ("maybe" readers included) and counts the sessions with no receipt.
	ReadersOf(p string) (readBy []string, unrecorded int)
}

// Engine withholds and restores notes of one vault, each move one gate
// commit recorded first in the intent file.
type Engine struct {
	repo   *repo.Repo
	log    *slog.Logger
	now    func() time.Time
	intent durable.Intent
	vault  string
	host   Host
}

// Config is what New needs: the repository, the gate's log and clock, the
// intent file (IntentFile in the state dir), the vault (verifiers of
// reverify run there) and the host.
type Config struct {
	Repo   *repo.Repo
	Log    *slog.Logger
	Now    func() time.Time
	Intent durable.Intent
	Vault  string
	Host   Host
}

// New returns the engine of c.
func New(c Config) *Engine {
	return &Engine{repo: c.Repo, log: c.Log, now: c.Now, intent: c.Intent, vault: c.Vault, host: c.Host}
}

// Sweep withholds every active note that is past its `stale_after` or whose
// fingerprinted sources changed at HEAD, and has the host remove the empty
// session folders of 90-inbox/ whose grace period passed. Cost: a walk of HEAD's trees and,
// once per note blob ever seen, its frontmatter (cached by blob id); one
// commit (O(changed paths)) per note withheld. The caller holds the gate's
// lock and has finished any move a killed gate left (Finish).
func (e *Engine) Sweep(pol *policy.Policy) (*Summary, error) {
	_, head, err := e.repo.Head()
	if err != nil {
		return nil, err
	}
	hv, err := decide.NewHeadView(e.repo, head)
	if err != nil {
		return nil, err
	}
	s := &Summary{Withheld: []Withheld{}}
	now := e.now().UTC()
	s.Sessions = e.host.PruneSessions(pol, now)
	if hv.Root() == nil {
		return s, nil
	}
	var notes []NoteAt
	if err := CollectNotes(hv, hv.Root(), "", &notes); err != nil {
		return nil, err
	}
	for _, n := range notes {
		f, err := hv.Facts(n.Blob)
		if err != nil {
			return nil, err
		}
		if !f.InForce || !f.Parsed {
			continue
		}
		s.Checked++
		reason, detail, err := staleness(hv, n.Path, f, now)
		if err != nil {
			return nil, err
		}
		if reason == "" {
			continue
		}
		w, err := e.withhold(pol, n.Path, reason, detail, now)
		if err != nil {
			s.Errors = append(s.Errors, fmt.Sprintf("withhold %s: %v", n.Path, err))
			continue
		}
		s.Withheld = append(s.Withheld, *w)
	}
	return s, nil
}

// NoteAt is a note file at HEAD: its path and blob.
type NoteAt struct {
	Path string
	Blob repo.Hash
}

// CollectNotes lists the .md files under t (but index.md, log.md, hidden
// names and the skipped top-level folders).
func CollectNotes(hv *decide.HeadView, t *repo.Tree, dir string, out *[]NoteAt) error {
	for _, e := range t.Entries {
		if strings.HasPrefix(e.Name, ".") {
			continue
		}
		p := e.Name
		if dir != "" {
			p = dir + "/" + e.Name
		}
		switch {
		case e.Mode == repo.ModeDir:
			if dir == "" && sweepSkip[e.Name] {
				continue
			}
			sub, err := hv.Repo().Tree(e.Hash)
			if err != nil {
				return fmt.Errorf("read tree %s: %w", p, err)
			}
			if err := CollectNotes(hv, sub, p, out); err != nil {
				return err
			}
		case e.Mode.IsFile() && e.Mode != repo.ModeSymlink && dir != "" && strings.HasSuffix(e.Name, ".md") && e.Name != "index.md" && e.Name != "log.md" && !view.IsArchivePage(p):
			*out = append(*out, NoteAt{p, e.Hash})
		}
	}
	return nil
}

// staleness says why a note in force must be withheld ("" if it need not).
func staleness(hv *decide.HeadView, self string, f decide.NoteFacts, now time.Time) (reason, detail string, err error) {
	if !f.StaleAfter.IsZero() && now.After(f.StaleAfter) {
		return WithholdStale, fmt.Sprintf("stale_after %s has passed", f.StaleAfter.UTC().Format(time.RFC3339)), nil
	}
	fails, err := sourceMismatches(hv, self, f)
	if err != nil || len(fails) == 0 {
		return "", "", err
	}
	return WithholdSourceChanged, strings.Join(fails, "; "), nil
}

// sourceMismatches lists each fingerprinted source that is not at HEAD
// with the recorded blob id. A source deprecated in favour of the note
// itself (superseded_by self: the supersession commit rewrote it) is not
// one: it is history, not evidence gone stale
// (TestSupersedingNoteNotWithheldForItsSource).
func sourceMismatches(hv *decide.HeadView, self string, f decide.NoteFacts) ([]string, error) {
	var out []string
	for _, fp := range f.Fingerprints {
		if decide.SourcePathError(fp.Resource) != "" {
			out = append(out, fmt.Sprintf("source %s is not a vault path", decide.ClipText(fp.Resource)))
			continue
		}
		e, err := hv.Entry(fp.Resource)
		if err != nil {
			return nil, err
		}
		switch {
		case e == nil:
			out = append(out, fmt.Sprintf("source %s is gone at HEAD %.12s (was %s%.12s)", fp.Resource, hv.Commit(), decide.FingerprintPrefix, fp.Blob))
		case e.Hash.String() != fp.Blob:
			if retired, err := retiredFor(hv, e, self); err != nil {
				return nil, err
			} else if retired {
				continue
			}
			out = append(out, fmt.Sprintf("source %s changed (%s%.12s, now %s%.12s at HEAD %.12s)", fp.Resource, decide.FingerprintPrefix, fp.Blob, decide.FingerprintPrefix, e.Hash, hv.Commit()))
		}
	}
	return out, nil
}

// retiredFor: the note at e is deprecated with superseded_by self.
func retiredFor(hv *decide.HeadView, e *repo.TreeEntry, self string) (bool, error) {
	if self == "" {
		return false, nil
	}
	sf, err := hv.Facts(e.Hash)
	if err != nil {
		return false, err
	}
	return sf.Status == note.StatusDeprecated && path.Clean(strings.TrimPrefix(sf.SupersededBy, "/")) == self, nil
}

// SetKey sets key in mapping m (appended when absent).
func SetKey(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, decide.Str(key), v)
}

// DropKey removes key from mapping m.
func DropKey(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return
		}
	}
}

// WithheldNote rewrites a note as withheld.
func WithheldNote(b []byte, at time.Time, reason, detail string) ([]byte, error) {
	n, fs := note.Parse(b)
	if n == nil {
		return nil, fmt.Errorf("note does not parse: %v", fs)
	}
	SetKey(n.Front, "status", decide.Str(note.StatusDraft))
	SetKey(n.Front, decide.WithheldKey, decide.Keyed("at", at.UTC().Format(time.RFC3339), "reason", reason, "detail", detail))
	return note.Render(n.Front, n.Body)
}

// restoredNote puts a withheld note back in force: status stable, no
// `withheld`, a fresh stale_after when the old one has passed, and a
// `verified` entry for who re-verified it.
func restoredNote(b []byte, at time.Time, ttlDays int, by string) ([]byte, error) {
	n, fs := note.Parse(b)
	if n == nil {
		return nil, fmt.Errorf("note does not parse: %v", fs)
	}
	DropKey(n.Front, decide.WithheldKey)
	SetKey(n.Front, "status", decide.Str(note.StatusStable))
	stale := true
	if s, ok := n.Scalar("stale_after"); ok {
		if norm, ok := note.NormalizeTime(s); ok {
			if t, err := time.Parse(time.RFC3339Nano, norm); err == nil && t.After(at) {
				stale = false
			}
		}
	}
	if stale {
		SetKey(n.Front, "stale_after", decide.Str(at.UTC().AddDate(0, 0, ttlDays).Format(time.RFC3339)))
	}
	entry := decide.Keyed("by", by, "at", at.UTC().Format(time.RFC3339))
	if v := n.Get("verified"); v != nil && v.Kind == yaml.SequenceNode {
		v.Content = append(v.Content, entry)
	} else {
		SetKey(n.Front, "verified", &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{entry}})
	}
	return note.Render(n.Front, n.Body)
}

// Intent is what IntentFile holds: the move a commit is about to make.
type Intent struct {
	Parent string   `json:"parent"`
	Paths  []string `json:"paths"`
	Kind   string   `json:"kind"`
	Note   string   `json:"note"`
}

// Move is one durable change of the vault by a gate commit: its kind (the
// audit entry's), the note it is about, the changes, the commit message and
// the audit entry's data (the commit is added).
type Move struct {
	Kind, Note string
	Changes    []repo.Change
	Msg        string
	Audit      map[string]string
}

// Commit makes m on branch at head: the intent recorded, one commit, the
// audit entry, then the work tree and index; a gate killed on the way
// finishes it on its next Finish.
func (e *Engine) Commit(pol *policy.Policy, branch repo.RefName, head repo.Hash, m Move) (string, error) {
	in := Intent{Parent: head.String(), Kind: m.Kind, Note: m.Note}
	for _, c := range m.Changes {
		in.Paths = append(in.Paths, c.Path)
	}
	if err := e.intent.Record(in); err != nil {
		return "", err
	}
	h, err := e.repo.CommitChanges(branch, head, m.Changes, e.host.Signature(pol), m.Msg)
	if err != nil {
		e.intent.Done()
		return "", err
	}
	m.Audit["commit"] = h.String()
	if err := e.host.Audit(m.Kind, m.Audit); err != nil {
		return "", err
	}
	if err := e.repo.Checkout(m.Changes); err != nil {
		return "", err
	}
	return h.String(), nil
}

// Done ends the move Commit recorded.
func (e *Engine) Done() error { return e.intent.Done() }

// commitLifecycle commits one lifecycle change of a note (withhold or
// restore) with the gate's commit machinery: the note, its folder's log.md
// line, one commit, an audit entry, then the work tree and index.
func (e *Engine) commitLifecycle(pol *policy.Policy, p string, content []byte, kind, logLine, msg string, audit map[string]string) (string, error) {
	branch, head, err := e.repo.Head()
	if err != nil {
		return "", err
	}
	ch, err := e.host.Changes(head, p, content, logLine)
	if err != nil {
		return "", err
	}
	h, err := e.Commit(pol, branch, head, Move{Kind: kind, Note: p, Changes: ch, Msg: msg, Audit: audit})
	if err != nil {
		return "", err
	}
	e.log.Info(kind, "path", p, "commit", h)
	return h, e.intent.Done()
}

// Finish completes a withhold, restore or policy edit a killed gate left
// between its ref update and its work tree: the paths are checked out from
// HEAD (a no-op when the commit never happened) and, when HEAD moved past
// the recorded parent, the audit entry is written again (at least once).
func (e *Engine) Finish() error {
	var in Intent
	if ok, err := e.intent.Load(&in); !ok {
		return err
	}
	_, head, err := e.repo.Head()
	if err != nil {
		return err
	}
	var ch []repo.Change
	for _, p := range in.Paths {
		if decide.SourcePathError(p) != "" {
			return fmt.Errorf("%s names %q, not a vault path", IntentFile, p)
		}
		b, err := e.repo.FileAt(head, p)
		if err != nil {
			return err
		}
		if b != nil {
			ch = append(ch, repo.Change{Path: p, Content: b})
		}
	}
	if len(ch) > 0 {
		if err := e.repo.Checkout(ch); err != nil {
			return err
		}
	}
	if head.String() != in.Parent {
		e.host.Note(in.Kind, map[string]string{"path": in.Note, "commit": head.String(), "recovered": "true"})
	}
	return e.intent.Done()
}

func (e *Engine) withhold(pol *policy.Policy, p, reason, detail string, now time.Time) (*Withheld, error) {
	_, head, err := e.repo.Head()
	if err != nil {
		return nil, err
	}
	old, err := e.repo.FileAt(head, p)
	if err != nil || old == nil {
		return nil, fmt.Errorf("read %s at HEAD: %v", p, err)
	}
	b, err := WithheldNote(old, now, reason, detail)
	if err != nil {
		return nil, err
	}
	sp := decide.SanitizeLine(p)
	msg := fmt.Sprintf("fedmem: withhold %s (%s)\n\n%s\n\nFedmem-Withheld: %s\nFedmem-Reason: %s\n", sp, reason, decide.SanitizeLine(detail), sp, reason)
	logLine := fmt.Sprintf("- %s withheld [%s](%s): %s\n", now.Format(time.RFC3339), decide.Label(path.Base(p)), path.Base(p), decide.Label(reason+": "+detail))
	readBy, unrecorded := e.host.ReadersOf(p)
	c, err := e.commitLifecycle(pol, p, b, "withhold", logLine, msg, map[string]string{"path": p, "reason": reason, "detail": detail,
		"read_by": strings.Join(readBy, ","), "sessions_unrecorded": strconv.Itoa(unrecorded)})
	if err != nil {
		return nil, err
	}
	return &Withheld{Path: p, Reason: reason, Detail: detail, Commit: c, ReadBy: readBy, Unrecorded: unrecorded}, nil
}

// Reverify re-checks the withheld note at p (a vault path the caller
// resolved): every fingerprinted source must have its recorded blob id at
// HEAD and every policy verifier for its type must pass (run on the note as
// it stands). Then it is restored by a gate commit (status stable,
// `withheld` dropped, a fresh stale_after if the old one passed,
// `verified: {by: <by>}`); otherwise the result lists what fails. The
// caller holds the gate's lock and has called Finish.
func (e *Engine) Reverify(pol *policy.Policy, p, by string) (*ReverifyResult, error) {
	_, head, err := e.repo.Head()
	if err != nil {
		return nil, err
	}
	hv, err := decide.NewHeadView(e.repo, head)
	if err != nil {
		return nil, err
	}
	ent, err := hv.Entry(p)
	if err != nil {
		return nil, err
	}
	if ent == nil || !ent.Mode.IsFile() {
		return nil, fmt.Errorf("%s is not a note in the vault at HEAD", p)
	}
	f, err := hv.Facts(ent.Hash)
	if err != nil {
		return nil, err
	}
	if !f.Withheld {
		return nil, fmt.Errorf("%s: %w (status %q)", p, ErrNotWithheld, f.Status)
	}
	res := &ReverifyResult{Path: p}
	if res.Failures, err = sourceMismatches(hv, p, f); err != nil {
		return nil, err
	}
	// Never two in force for one name (decide/conflicts.go).
	if cf, err := decide.RestoreConflicts(hv, p, f); err != nil {
		return nil, err
	} else {
		res.Failures = append(res.Failures, cf...)
	}
	content, err := e.repo.FileAt(head, p)
	if err != nil {
		return nil, err
	}
	if len(res.Failures) == 0 {
		vs := pol.VerifiersFor(f.Type)
		if len(vs) > 0 {
			run := verify.NewRunner(e.vault)
			srcs := make([]decide.SourceProof, 0, len(f.Fingerprints))
			for _, fp := range f.Fingerprints {
				srcs = append(srcs, decide.SourceProof{Resource: fp.Resource, Fingerprint: decide.FingerprintPrefix + fp.Blob})
			}
			for _, v := range vs {
				r := run.Run(context.Background(), v, content, srcs)
				res.Verified = append(res.Verified, r)
				if !r.Passed {
					res.Failures = append(res.Failures, fmt.Sprintf("verifier %s failed (exit %d, timed out %v): %s", v.Name, r.ExitCode, r.TimedOut, r.Summary()))
				}
			}
		}
	}
	if len(res.Failures) > 0 {
		e.host.Note("reverify-failed", map[string]any{"path": p, "by": by, "failures": res.Failures})
		return res, nil
	}
	now := e.now().UTC()
	b, err := restoredNote(content, now, pol.TTLDays(f.Type), by)
	if err != nil {
		return nil, err
	}
	sp := decide.SanitizeLine(p)
	msg := fmt.Sprintf("fedmem: restore %s (reverified by %s)\n\nEvery fingerprinted source matches HEAD %s.\n\nFedmem-Restored: %s\nFedmem-Verified-By: %s\n", sp, by, head, sp, by)
	logLine := fmt.Sprintf("- %s restored [%s](%s), reverified by %s\n", now.Format(time.RFC3339), decide.Label(path.Base(p)), path.Base(p), decide.Label(by))
	if res.Commit, err = e.commitLifecycle(pol, p, b, "restore", logLine, msg, map[string]string{"path": p, "by": by}); err != nil {
		return nil, err
	}
	res.Restored = true
	return res, nil
}
