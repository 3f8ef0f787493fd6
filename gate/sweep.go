package gate

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
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/fedmem/fedmem/gate/durable"
	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/vault"
	"github.com/fedmem/fedmem/vault/note"
	"github.com/fedmem/fedmem/vault/repo"
)

// WithheldKey is the extension key of a withheld note.
const WithheldKey = "withheld"

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

// SweepSummary is the result of one sweep. Fields are only ever added.
type SweepSummary struct {
	Checked  int        `json:"checked"` // notes in force looked at
	Withheld []Withheld `json:"withheld"`
	Errors   []string   `json:"errors,omitempty"`
	// Sessions is what the sweep did with empty session folders in
	// 90-inbox/ (prune_linux.go).
	Sessions *SessionPrune `json:"sessions,omitempty"`
}

// ReverifyResult says whether a withheld note was restored, or what fails.
type ReverifyResult struct {
	Path     string        `json:"path"`
	Restored bool          `json:"restored"`
	Commit   string        `json:"commit,omitempty"`
	Failures []string      `json:"failures,omitempty"`
	Verified []VerifierRun `json:"verifiers,omitempty"`
}

// sweepFolders are never swept: the contract (a human changes it), the
// inbox and the archive are not memory in force.
var sweepSkip = map[string]bool{"00-global": true, vault.InboxDir: true, "99-archive": true}

// sweepIntent, in the state dir, names the paths a withhold/restore commit
// is about to change; a gate killed between the ref update and the work
// tree finishes the checkout on its next sweep.
const sweepIntentFile = "sweep.intent"

func (g *Gate) sweepIntent() durable.Intent { return durable.Intent(g.statePath(sweepIntentFile)) }

// Sweep withholds every active note that is past its `stale_after` or whose
// fingerprinted sources changed at HEAD, and removes the empty session
// folders of 90-inbox/ whose grace period passed (pruneSessions). Cost: a walk of HEAD's trees and,
// once per note blob ever seen, its frontmatter (cached by blob id); one
// commit (O(changed paths)) per note withheld.
func (g *Gate) Sweep() (*SweepSummary, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.finishSweepIntent(); err != nil {
		return nil, err
	}
	pol, err := g.Policy()
	if err != nil {
		return nil, err
	}
	_, head, err := g.repo.Head()
	if err != nil {
		return nil, err
	}
	hv, err := newHeadView(g.repo, head)
	if err != nil {
		return nil, err
	}
	s := &SweepSummary{Withheld: []Withheld{}}
	now := g.now().UTC()
	s.Sessions = g.sweepSessions(pol, now)
	if hv.root == nil {
		return s, nil
	}
	var notes []noteAt
	if err := collectNotes(hv, hv.root, "", &notes); err != nil {
		return nil, err
	}
	for _, n := range notes {
		f, err := hv.facts(n.blob)
		if err != nil {
			return nil, err
		}
		if !f.InForce || !f.Parsed {
			continue
		}
		s.Checked++
		reason, detail, err := staleness(hv, n.path, f, now)
		if err != nil {
			return nil, err
		}
		if reason == "" {
			continue
		}
		w, err := g.withhold(pol, n.path, reason, detail, now)
		if err != nil {
			s.Errors = append(s.Errors, fmt.Sprintf("withhold %s: %v", n.path, err))
			continue
		}
		s.Withheld = append(s.Withheld, *w)
	}
	return s, nil
}

// sweepSessions prunes empty session folders and records the counts for
// `fedmem gate status`. Failures are reported in the result, never fatal to
// the sweep.
func (g *Gate) sweepSessions(pol *policy.Policy, now time.Time) *SessionPrune {
	hours := pol.PruneEmptyAfterHours
	in, err := g.openInbox()
	if err != nil {
		return &SessionPrune{AfterHours: hours, Pruned: []string{}, Errors: []string{err.Error()}}
	}
	defer in.Close()
	p := g.pruneSessions(in, hours, now)
	p.HeldMarksPruned = g.pruneHeldMarks(in)
	var problems []string
	p.ReceiptsStored, problems = g.storeSessionReceipts(in, pol)
	p.Errors = append(p.Errors, problems...)
	if err := g.recordPrune(p, now); err != nil {
		p.Errors = append(p.Errors, "record prune status: "+err.Error())
	}
	return p
}

type noteAt struct {
	path string
	blob repo.Hash
}

// collectNotes lists the .md files under t (but index.md, log.md, hidden
// names and the skipped top-level folders).
func collectNotes(hv *headView, t *repo.Tree, dir string, out *[]noteAt) error {
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
			sub, err := hv.r.Tree(e.Hash)
			if err != nil {
				return fmt.Errorf("read tree %s: %w", p, err)
			}
			if err := collectNotes(hv, sub, p, out); err != nil {
				return err
			}
		case e.Mode.IsFile() && e.Mode != repo.ModeSymlink && dir != "" && strings.HasSuffix(e.Name, ".md") && e.Name != "index.md" && e.Name != "log.md" && !isArchivePage(p):
			*out = append(*out, noteAt{p, e.Hash})
		}
	}
	return nil
}

// isArchivePage reports whether p is an archive page the gate wrote when a
// folder's log.md or index.md filled up (<folder>/log/000001.md,
// <folder>/index/000002.md; folderlog.go appendLine): gate pages, not notes.
func isArchivePage(p string) bool {
	dir, name := path.Split(p)
	kind := path.Base(strings.TrimSuffix(dir, "/"))
	if (kind != "log" && kind != "index") || strings.Count(dir, "/") < 2 {
		return false
	}
	num, ok := strings.CutSuffix(name, ".md")
	if !ok || len(num) != 6 {
		return false
	}
	for _, c := range num {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// staleness says why a note in force must be withheld ("" if it need not).
func staleness(hv *headView, self string, f noteFacts, now time.Time) (reason, detail string, err error) {
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
func sourceMismatches(hv *headView, self string, f noteFacts) ([]string, error) {
	var out []string
	for _, fp := range f.Fingerprints {
		if sourcePathError(fp.Resource) != "" {
			out = append(out, fmt.Sprintf("source %s is not a vault path", clipText(fp.Resource)))
			continue
		}
		e, err := hv.entry(fp.Resource)
		if err != nil {
			return nil, err
		}
		switch {
		case e == nil:
			out = append(out, fmt.Sprintf("source %s is gone at HEAD %.12s (was %s%.12s)", fp.Resource, hv.commit, FingerprintPrefix, fp.Blob))
		case e.Hash.String() != fp.Blob:
			if retired, err := retiredFor(hv, e, self); err != nil {
				return nil, err
			} else if retired {
				continue
			}
			out = append(out, fmt.Sprintf("source %s changed (%s%.12s, now %s%.12s at HEAD %.12s)", fp.Resource, FingerprintPrefix, fp.Blob, FingerprintPrefix, e.Hash, hv.commit))
		}
	}
	return out, nil
}

// retiredFor: the note at e is deprecated with superseded_by self.
func retiredFor(hv *headView, e *repo.TreeEntry, self string) (bool, error) {
	if self == "" {
		return false, nil
	}
	sf, err := hv.facts(e.Hash)
	if err != nil {
		return false, err
	}
	return sf.Status == note.StatusDeprecated && path.Clean(strings.TrimPrefix(sf.SupersededBy, "/")) == self, nil
}

// setKey sets key in mapping m (appended when absent).
func setKey(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, str(key), v)
}

func dropKey(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return
		}
	}
}

// withheldNote rewrites a note as withheld.
func withheldNote(b []byte, at time.Time, reason, detail string) ([]byte, error) {
	n, fs := note.Parse(b)
	if n == nil {
		return nil, fmt.Errorf("note does not parse: %v", fs)
	}
	setKey(n.Front, "status", str(note.StatusDraft))
	setKey(n.Front, WithheldKey, keyed("at", at.UTC().Format(time.RFC3339), "reason", reason, "detail", detail))
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
	dropKey(n.Front, WithheldKey)
	setKey(n.Front, "status", str(note.StatusStable))
	stale := true
	if s, ok := n.Scalar("stale_after"); ok {
		if norm, ok := note.NormalizeTime(s); ok {
			if t, err := time.Parse(time.RFC3339Nano, norm); err == nil && t.After(at) {
				stale = false
			}
		}
	}
	if stale {
		setKey(n.Front, "stale_after", str(at.UTC().AddDate(0, 0, ttlDays).Format(time.RFC3339)))
	}
	entry := keyed("by", by, "at", at.UTC().Format(time.RFC3339))
	if v := n.Get("verified"); v != nil && v.Kind == yaml.SequenceNode {
		v.Content = append(v.Content, entry)
	} else {
		setKey(n.Front, "verified", &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{entry}})
	}
	return note.Render(n.Front, n.Body)
}

type sweepIntent struct {
	Parent string   `json:"parent"`
	Paths  []string `json:"paths"`
	Kind   string   `json:"kind"`
	Note   string   `json:"note"`
}

// commitLifecycle commits one lifecycle change of a note (withhold or
// restore) with the gate's commit machinery: the note, its folder's log.md
// line, one commit, an audit entry, then the work tree and index.
func (g *Gate) commitLifecycle(pol *policy.Policy, p string, content []byte, kind, logLine, msg string, audit map[string]string) (string, error) {
	branch, head, err := g.repo.Head()
	if err != nil {
		return "", err
	}
	cs := g.newChangeSet(head)
	cs.set(p, content)
	if err := cs.appendLine(path.Dir(p)+"/log.md", logHeader, logLine); err != nil {
		return "", err
	}
	ch := cs.list()
	in := sweepIntent{Parent: head.String(), Kind: kind, Note: p}
	for _, c := range ch {
		in.Paths = append(in.Paths, c.Path)
	}
	if err := g.sweepIntent().Record(in); err != nil {
		return "", err
	}
	h, err := g.repo.CommitChanges(branch, head, ch, g.signature(pol), msg)
	if err != nil {
		g.sweepIntent().Done()
		return "", err
	}
	audit["commit"] = h.String()
	if _, err := g.audit.Append(kind, audit); err != nil {
		return "", err
	}
	if err := g.repo.Checkout(ch); err != nil {
		return "", err
	}
	g.log.Info(kind, "path", p, "commit", h.String())
	return h.String(), g.sweepIntent().Done()
}

// finishSweepIntent completes a withhold or restore a killed gate left
// between its ref update and its work tree: the paths are checked out from
// HEAD (a no-op when the commit never happened) and, when HEAD moved past
// the recorded parent, the audit entry is written again (at least once).
func (g *Gate) finishSweepIntent() error {
	var in sweepIntent
	if ok, err := g.sweepIntent().Load(&in); !ok {
		return err
	}
	_, head, err := g.repo.Head()
	if err != nil {
		return err
	}
	var ch []change
	for _, p := range in.Paths {
		if sourcePathError(p) != "" {
			return fmt.Errorf("%s names %q, not a vault path", sweepIntentFile, p)
		}
		b, err := g.repo.FileAt(head, p)
		if err != nil {
			return err
		}
		if b != nil {
			ch = append(ch, change{Path: p, Content: b})
		}
	}
	if len(ch) > 0 {
		if err := g.repo.Checkout(ch); err != nil {
			return err
		}
	}
	if head.String() != in.Parent {
		g.note(in.Kind, map[string]string{"path": in.Note, "commit": head.String(), "recovered": "true"})
	}
	return g.sweepIntent().Done()
}

func (g *Gate) withhold(pol *policy.Policy, p, reason, detail string, now time.Time) (*Withheld, error) {
	_, head, err := g.repo.Head()
	if err != nil {
		return nil, err
	}
	old, err := g.repo.FileAt(head, p)
	if err != nil || old == nil {
		return nil, fmt.Errorf("read %s at HEAD: %v", p, err)
	}
	b, err := withheldNote(old, now, reason, detail)
	if err != nil {
		return nil, err
	}
	sp := sanitizeLine(p)
	msg := fmt.Sprintf("fedmem: withhold %s (%s)\n\n%s\n\nFedmem-Withheld: %s\nFedmem-Reason: %s\n", sp, reason, sanitizeLine(detail), sp, reason)
	logLine := fmt.Sprintf("- %s withheld [%s](%s): %s\n", now.Format(time.RFC3339), label(path.Base(p)), path.Base(p), label(reason+": "+detail))
	readBy, unrecorded := g.readersOf(p)
	c, err := g.commitLifecycle(pol, p, b, "withhold", logLine, msg, map[string]string{"path": p, "reason": reason, "detail": detail,
		"read_by": strings.Join(readBy, ","), "sessions_unrecorded": strconv.Itoa(unrecorded)})
	if err != nil {
		return nil, err
	}
	return &Withheld{Path: p, Reason: reason, Detail: detail, Commit: c, ReadBy: readBy, Unrecorded: unrecorded}, nil
}

// Reverify re-checks a withheld note, named by its vault path or by the id
// of the decision that promoted it: every fingerprinted source must have its
// recorded blob id at HEAD and every policy verifier for its type must pass
// (run on the note as it stands). Then it is restored by a gate commit
// (status stable, `withheld` dropped, a fresh stale_after if the old one
// passed, `verified: {by: <by>}`); otherwise the result lists what fails.
// reviewer is the human asking ("" when the gate user runs it directly: the
// note then records process:fedmem-gate).
func (g *Gate) Reverify(ref, reviewer string) (*ReverifyResult, error) {
	by := GateActor
	if reviewer != "" {
		if !validReviewer(reviewer) {
			return nil, fmt.Errorf("reviewer name %q is not usable", reviewer)
		}
		by = "human:" + reviewer
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.finishSweepIntent(); err != nil {
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
	_, head, err := g.repo.Head()
	if err != nil {
		return nil, err
	}
	hv, err := newHeadView(g.repo, head)
	if err != nil {
		return nil, err
	}
	e, err := hv.entry(p)
	if err != nil {
		return nil, err
	}
	if e == nil || !e.Mode.IsFile() {
		return nil, fmt.Errorf("%s is not a note in the vault at HEAD", p)
	}
	f, err := hv.facts(e.Hash)
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
	// Never two in force for one name (conflicts.go).
	if cf, err := restoreConflicts(hv, p, f); err != nil {
		return nil, err
	} else {
		res.Failures = append(res.Failures, cf...)
	}
	content, err := g.repo.FileAt(head, p)
	if err != nil {
		return nil, err
	}
	if len(res.Failures) == 0 {
		vs := pol.VerifiersFor(f.Type)
		if len(vs) > 0 {
			run := newVerifierRunner(g.vaultDir)
			srcs := make([]SourceProof, 0, len(f.Fingerprints))
			for _, fp := range f.Fingerprints {
				srcs = append(srcs, SourceProof{Resource: fp.Resource, Fingerprint: FingerprintPrefix + fp.Blob})
			}
			for _, v := range vs {
				r := run.run(context.Background(), v, content, srcs)
				res.Verified = append(res.Verified, r)
				if !r.Passed {
					res.Failures = append(res.Failures, fmt.Sprintf("verifier %s failed (exit %d, timed out %v): %s", v.Name, r.ExitCode, r.TimedOut, r.summary()))
				}
			}
		}
	}
	if len(res.Failures) > 0 {
		g.note("reverify-failed", map[string]any{"path": p, "by": by, "failures": res.Failures})
		return res, nil
	}
	now := g.now().UTC()
	b, err := restoredNote(content, now, pol.TTLDays(f.Type), by)
	if err != nil {
		return nil, err
	}
	sp := sanitizeLine(p)
	msg := fmt.Sprintf("fedmem: restore %s (reverified by %s)\n\nEvery fingerprinted source matches HEAD %s.\n\nFedmem-Restored: %s\nFedmem-Verified-By: %s\n", sp, by, head, sp, by)
	logLine := fmt.Sprintf("- %s restored [%s](%s), reverified by %s\n", now.Format(time.RFC3339), label(path.Base(p)), path.Base(p), label(by))
	if res.Commit, err = g.commitLifecycle(pol, p, b, "restore", logLine, msg, map[string]string{"path": p, "by": by}); err != nil {
		return nil, err
	}
	res.Restored = true
	return res, nil
}

// notePath turns a reverify argument into a vault path: a decision id (the
// path it promoted; a unique prefix of it will do) or a vault path of a note.
func (g *Gate) notePath(ref string) (string, error) {
	if !strings.ContainsAny(ref, "/") && !strings.HasSuffix(ref, ".md") {
		id, err := g.resolveID(ref, false)
		if err != nil {
			return "", err
		}
		if d, err := g.loadDecision(id); err == nil && d != nil && d.Path != "" {
			return d.Path, nil
		}
		return "", fmt.Errorf("decision %s promoted no note", id)
	}
	p := strings.TrimPrefix(ref, "/")
	if why := sourcePathError(p); why != "" || !strings.HasSuffix(p, ".md") {
		if why == "" {
			why = "is not a .md note"
		}
		return "", fmt.Errorf("%q is neither a decision id nor a note path: it %s", clipText(ref), why)
	}
	if top, _, _ := strings.Cut(p, "/"); sweepSkip[top] {
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
