package gate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fedmem/fedmem/gate/audit"
	"github.com/fedmem/fedmem/gate/commit"
	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/durable"
	"github.com/fedmem/fedmem/gate/intake"
	"github.com/fedmem/fedmem/gate/ledger"
	"github.com/fedmem/fedmem/gate/logsafe"
	"github.com/fedmem/fedmem/gate/origin"
	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/gate/remote"
	"github.com/fedmem/fedmem/gate/sign"
	"github.com/fedmem/fedmem/gate/validate"
	"github.com/fedmem/fedmem/gate/verify"
	"github.com/fedmem/fedmem/vault"
	"github.com/fedmem/fedmem/vault/note"
	"github.com/fedmem/fedmem/vault/repo"
)

// Options configures a Gate.
type Options struct {
	// Vault is the vault directory.
	Vault string
	// StateDir is the gate's private state; "" means DefaultStateDir(Vault).
	StateDir string
	// AllowSameUser lets the gate handle sessions whose directory belongs
	// to the gate's own uid (single-user machines). Without it such
	// sessions are refused.
	AllowSameUser bool
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// SignKey is a private key file (OpenSSH or armored OpenPGP, no
	// passphrase) the gate signs its commits with; "" leaves them unsigned.
	SignKey string
	// Spares is how many spare files `gate run` keeps made while idle, for
	// the writes of a burst (gate/durable/spares.go); 0: none.
	Spares int
}

// DefaultStateDir is a sibling of the vault, `.<name>.fedmem-gate`: on the
// same filesystem (so drafts can be moved there by rename) but outside the
// vault, so no sandbox (which sees the vault, .git included) can read other
// sessions' drafts there.
func DefaultStateDir(vaultDir string) string {
	return vault.GateStateDir(vaultDir)
}

// Gate claims, decides and promotes drafts of one vault.
type Gate struct {
	// ledger is the decisions, seen and pending records in the state
	// directory (gate/ledger).
	ledger *ledger.Ledger
	// showing: a review show is judging (reviewshow.go); the verifiers
	// do not run again, their recorded outcomes are shown.
	showing  bool
	vaultDir string
	state    string
	opts     Options
	log      *slog.Logger
	now      func() time.Time
	repo     *repo.Repo
	audit    *audit.Log
	unlock   func()
	uid      int
	// rates counts auto-promotions (nil until a policy with auto_promote
	// needs it).
	rates *rates
	// mu serialises passes and reviews (one writer of state and refs).
	mu sync.Mutex
	// viewAt is the commit the view manifest was last written for
	// (viewhost.go).
	viewAt string
	// journal is the pass's claim journal, open from its first claim to
	// its end; claimRecs holds the live claims' records, read from the
	// journals by openClaims (claimjournal.go).
	journal   *os.File
	recMu     sync.Mutex
	claimRecs map[string]Claim
	// commits writes the branch: promotions, a pass's group commit, the
	// checkout journal (gate/commit, commithost.go).
	commits *commit.Engine
	// flushCost is what flushing a group inside a pass has cost lately
	// (run.go, groupDue).
	flushCost time.Duration
	// remote bounds remote operations (remoteio.go).
	remote remote.Deadline
	// verify runs a pass's verifiers outside the lock (gate/verify.Pool; set
	// by Run); verifyAsync: the decision being judged is a pass's.
	verify      *verify.Pool
	verifyAsync bool
	// spares (Options.Spares > 0) are empty files the writes of a pass
	// take instead of new ones; Run keeps the pool filled while no pass
	// runs (passing) and none ended in the last spareIdle (lastPass).
	spares   *durable.Pool
	passing  atomic.Int32
	lastPass atomic.Int64
}

// Open checks the vault and the caller, prepares the state directory and
// takes its lock.
func Open(o Options) (*Gate, error) {
	dir, err := vault.Resolve(o.Vault)
	if err != nil {
		return nil, err
	}
	g := &Gate{vaultDir: dir, opts: o, log: o.Logger, now: o.Now, uid: os.Geteuid()}
	if g.log == nil {
		g.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	g.log = slog.New(logsafe.Handler(g.log.Handler()))
	if g.now == nil {
		g.now = time.Now
	}
	owner, err := intake.OwnerOf(filepath.Join(dir, ".git"))
	if err != nil {
		return nil, err
	}
	if owner != g.uid {
		return nil, fmt.Errorf("the gate must run as the vault's gate user (uid %d owns %s/.git; you are uid %d)", owner, dir, g.uid)
	}
	g.state = o.StateDir
	if g.state == "" {
		g.state = DefaultStateDir(dir)
	}
	if abs, err := filepath.Abs(g.state); err == nil {
		g.state = abs
	}
	g.ledger = ledger.New(g.state)
	if vault.Within(g.state, dir) {
		return nil, fmt.Errorf("state dir %s is inside the vault; sandboxes could read it", g.state)
	}
	// Refuses a state dir the gate did not create (owner, mode, link);
	// creates it only under a trusted parent (statedir_linux.go).
	subdirs := []string{claimsDir, decisionsDir, pendingDir, seenDir, committingDir}
	if o.Spares > 0 {
		subdirs = append(subdirs, spareDir)
	}
	if err := intake.PrepareStateDir(g.state, g.uid, subdirs); err != nil {
		return nil, err
	}
	if same, err := intake.SameFS(g.state, filepath.Join(dir, vault.InboxDir)); err != nil || !same {
		return nil, fmt.Errorf("state dir %s must be on the same filesystem as the vault (drafts are moved there by rename): %v", g.state, err)
	}
	if g.unlock, err = g.lockState(); err != nil {
		return nil, err
	}
	// Holding the lock, no other gate writes here: a ".tmp-*" file is a
	// partial writeAtomic of a gate killed mid-write (its rename never
	// happened, so nothing refers to it).
	for _, d := range []string{"", claimsDir, decisionsDir, pendingDir, seenDir, committingDir} {
		if tmps, err := filepath.Glob(filepath.Join(g.statePath(d), ".tmp-*")); err == nil {
			for _, t := range tmps {
				os.Remove(t)
			}
		}
	}
	if g.repo, err = openRepo(dir, g.statePath("git-lock.intent")); err != nil {
		g.unlock()
		return nil, err
	}
	if o.SignKey != "" {
		s, err := sign.LoadSigner(o.SignKey)
		if err != nil {
			g.unlock()
			return nil, err
		}
		g.repo.SetSigner(s)
	}
	if g.audit, err = audit.Open(g.state); err != nil {
		g.unlock()
		return nil, err
	}
	// A flush killed after its branch moved, before its index was
	// written: bring its files to HEAD first (commit/checkoutjournal.go).
	g.commits = g.committer()
	if err := g.commits.RecoverCheckout(); err != nil {
		g.audit.Close()
		g.unlock()
		return nil, err
	}
	if o.Spares > 0 {
		if g.spares, err = durable.OpenPool(g.statePath(spareDir)); err != nil {
			g.audit.Close()
			g.unlock()
			return nil, err
		}
		durable.UseSpares([]string{g.state, dir}, g.spares)
	}
	// Batch approvals a killed gate left half done (reviewgroup.go).
	if err := g.recoverReviewGroups(); err != nil {
		g.log.Warn("batch approvals not recovered (a later approval adopts their commits)", "err", err)
	}
	g.refreshView()
	return g, nil
}

// Close releases the state lock.
func (g *Gate) Close() error {
	if g.spares != nil {
		durable.DropSpares([]string{g.state, g.vaultDir}, g.spares)
	}
	err := g.audit.Close()
	g.unlock()
	return err
}

// SpareFiles is how many spare files the gate holds now (Options.Spares).
func (g *Gate) SpareFiles() int {
	if g.spares == nil {
		return 0
	}
	return g.spares.Len()
}

// StateDir returns the state directory in use.
func (g *Gate) StateDir() string { return g.state }

// Policy loads the vault's policy (defaults when the file is absent).
func (g *Gate) Policy() (*policy.Policy, error) {
	return policy.Load(filepath.Join(g.vaultDir, filepath.FromSlash(vault.PolicyFile)))
}

// Summary is the result of one Once call. Fields are only ever added.
type Summary struct {
	Promoted  int        `json:"promoted"`
	Pending   int        `json:"pending"`
	Rejected  int        `json:"rejected"`
	Deferred  int        `json:"deferred"`
	Decisions []Decision `json:"decisions"`
	Errors    []string   `json:"errors,omitempty"`
	Warnings  []string   `json:"warnings,omitempty"`
	// Timing: where the pass spent its time (run.go).
	Timing *PassTiming `json:"timing,omitempty"`
}

// Handled reports whether every draft seen reached a decision.
func (s *Summary) Handled() bool { return s.Deferred == 0 && len(s.Errors) == 0 }

var errRetry = errors.New("draft changed while read")

// SameUserWarning says what --allow-same-user gives up.
const SameUserWarning = "same-user mode: the agent's uid is the gate's uid, so outside the sandbox that user can write the vault and its history directly; guarantees 1 and 2 then rest on the sandbox alone"

// Once handles everything pending: it claims every ready draft of every
// session, then decides every claim — those just made and any an earlier
// (possibly killed) run left unfinished — then, while the pass is younger
// than passIntake (run.go), claims and decides the drafts that arrived
// meanwhile, a batch at a time. A draft that changes while read is retried
// a few times, then counted as deferred.
func (g *Gate) Once() (*Summary, error) {
	g.passing.Add(1)
	defer func() { g.lastPass.Store(time.Now().UnixNano()); g.passing.Add(-1) }()
	g.mu.Lock()
	defer g.mu.Unlock()
	defer g.refreshView()   // HEAD may have moved: the sandbox's view follows (viewhost.go)
	defer g.syncAfterPass() // push, fast-forward or replay with the policy's remote (sync.go)
	// Group commit (commit/groupcommit.go): the pass's writes are synced and its
	// promotions published in groups; endPass (deferred here for the error
	// returns) flushes the last group before the sync.
	tm := startTiming()
	g.commits.BeginPass()
	defer g.commits.EndPass()
	defer g.closeJournal()
	pol, err := g.Policy()
	if err != nil {
		return nil, err
	}
	s := &Summary{Timing: tm}
	in, err := g.openInbox()
	if err != nil {
		return nil, err
	}
	defer in.Close()
	sessions, err := in.Sessions()
	if err != nil {
		return nil, err
	}
	// intake claims the ready drafts of every session (at most MaxDrafts
	// from one session in a pass) and returns the new claims' ids in order.
	// A session refused once is not tried again in the pass.
	warned := false
	perSession := map[string]int{}
	refused := map[string]bool{}
	intake := func(sessions []string) []string {
		var ids []string
		for _, sess := range sessions {
			if refused[sess] || perSession[sess] >= pol.MaxDrafts {
				continue
			}
			owner, err := in.SessionOwner(sess)
			if err != nil {
				s.Errors = append(s.Errors, fmt.Sprintf("session %s: %v%s", sess, err, in.AccessHint(sess, err)))
				refused[sess] = true
				continue
			}
			if owner == g.uid {
				if !g.opts.AllowSameUser {
					s.Errors = append(s.Errors, fmt.Sprintf("session %s belongs to the gate's own uid %d: refusing it (a dedicated gate user is required; --allow-same-user accepts weaker guarantees)", sess, owner))
					refused[sess] = true
					continue
				}
				if !warned {
					s.Warnings = append(s.Warnings, SameUserWarning)
					warned = true
				}
			}
			claims, held, err := g.claimSession(in, sess, pol.MaxDrafts-perSession[sess])
			perSession[sess] += len(claims) + held
			for _, c := range claims {
				g.note("claim", c)
				g.log.Info("claimed", "id", c.ID, "session", c.Session, "name", c.Name)
				ids = append(ids, c.ID)
			}
			if err != nil {
				s.Errors = append(s.Errors, err.Error())
			}
		}
		sort.Strings(ids)
		return ids
	}
	intake(sessions)
	ids, orphans, err := g.openClaims()
	if err != nil {
		return s, err
	}
	for _, id := range orphans {
		s.Errors = append(s.Errors, fmt.Sprintf("claim %s: claims/%s.draft has no claim record (lost with a power failure between the record and the move?): left there, undecided", id, id))
	}
	tm.lap(&tm.ClaimMs)
	tm.Claims = len(ids)
	var decs []*Decision
	// Drafts that arrive while the pass decides are taken in by the same
	// pass, a batch at a time, while it is younger than passIntake: under
	// a burst they join the stream instead of waiting for the pass to end
	// and paying a new pass's fixed costs (issue 9).
	for batch := 0; len(ids) > 0; batch++ {
		if batch > 0 {
			tm.Claims += len(ids)
		}
		decs = g.decideBatch(in, pol, s, ids, decs)
		if time.Since(tm.Start) >= passIntake {
			break
		}
		sessions, err := in.Sessions()
		if err != nil {
			break // the next pass lists again
		}
		ids = intake(sessions)
	}
	tm.lap(&tm.DecideMs)
	tm.Groups++
	if err := g.commits.EndPass(); err != nil {
		s.Errors = append(s.Errors, err.Error())
	} else if err := g.dropDeadJournals(); err != nil {
		s.Errors = append(s.Errors, err.Error())
	}
	tm.lap(&tm.PublishMs)
	for _, d := range decs {
		if d.Decided.IsZero() {
			// Its group was not published: still claimed, decided by the
			// next pass.
			s.Errors = append(s.Errors, fmt.Sprintf("claim %s: not decided in this pass (its group commit failed)", d.ID))
			continue
		}
		s.Decisions = append(s.Decisions, *d)
		switch d.State {
		case StatePromoted:
			s.Promoted++
		case StatePending:
			s.Pending++
		case StateRejected:
			s.Rejected++
		}
	}
	return s, nil
}

// decideBatch decides claims in order, appending to decs. Drafts are read
// and validated ahead on the other cores (prefetch.go); they are decided
// here one at a time, in order. A draft that changes while read is retried
// a few times, then counted as deferred.
func (g *Gate) decideBatch(in *inbox, pol *policy.Policy, s *Summary, ids []string, decs []*Decision) []*Decision {
	tm := s.Timing
	pre := g.startPrefetch(ids, pol.MaxDraftBytes)
	defer pre.close()
	for attempt := 0; ; attempt++ {
		var retry []string
		for i, id := range ids {
			var pf *prefetched
			if attempt == 0 {
				pf = pre.take(i)
			}
			if g.groupDue() {
				tm.Groups++
				f0 := time.Now()
				if err := g.commits.Flush(); err != nil {
					s.Errors = append(s.Errors, err.Error())
				}
				tm.FlushMs += g.flushed(time.Since(f0))
			}
			g.commits.Counted()
			d, err := g.process(in, pol, id, pf)
			if errors.Is(err, errRetry) {
				retry = append(retry, id)
				continue
			}
			if errors.Is(err, errReturned) {
				continue // back in the inbox, unread; its receipt says why
			}
			if errors.Is(err, decide.ErrVerifying) {
				s.Deferred++ // its verifiers run outside the lock (gate/verify.Pool)
				continue
			}
			if err != nil {
				s.Errors = append(s.Errors, fmt.Sprintf("claim %s: %v", id, err))
				continue
			}
			decs = append(decs, d)
		}
		if len(retry) == 0 || attempt >= 2 {
			s.Deferred += len(retry)
			return decs
		}
		ids = retry
		time.Sleep(50 * time.Millisecond)
	}
}

// openClaims lists claim ids in claims/, oldest first: the drafts there
// with a record in a claim journal (claimjournal.go) or an older gate's
// claims/ID.json. Records whose draft never arrived (a crash between the
// record and the rename: the draft is then still in the inbox and is
// claimed again) are dropped. orphans are the drafts with no record.
func (g *Gate) openClaims() (ids, orphans []string, err error) {
	ents, err := os.ReadDir(g.statePath(claimsDir))
	if err != nil {
		return nil, nil, err
	}
	have := map[string]bool{}
	var names []string
	for _, e := range ents {
		have[e.Name()] = true
		names = append(names, e.Name())
	}
	// Group markers: kept while one of their drafts is claimed.
	if err := g.commits.LoadGroupMarkers(func(id string) bool { return have[id+".draft"] || have[id+".json"] }); err != nil {
		return nil, nil, err
	}
	recs, err := g.loadJournals(names, func(id string) bool { return have[id+".draft"] })
	if err != nil {
		return nil, nil, err
	}
	g.recMu.Lock()
	g.claimRecs = recs
	g.recMu.Unlock()
	ids = make([]string, 0, len(recs))
	for id := range recs {
		ids = append(ids, id)
	}
	for n := range have {
		if id, ok := strings.CutSuffix(n, ".draft"); ok && ledger.ValidID(id) && !have[id+".json"] {
			if _, ok := recs[id]; !ok {
				orphans = append(orphans, id)
			}
		}
	}
	sort.Strings(orphans)
	// Records of older gates: a file per claim.
	for n := range have {
		id, ok := strings.CutSuffix(n, ".json")
		if !ok || !ledger.ValidID(id) {
			continue
		}
		if _, ok := recs[id]; ok {
			continue
		}
		if have[id+".draft"] {
			ids = append(ids, id)
			continue
		}
		if d, _ := g.ledger.Load(id); d == nil {
			os.Remove(g.statePath(claimsDir, n))
		} else {
			ids = append(ids, id) // decided; finish the cleanup
		}
	}
	sort.Strings(ids)
	return ids, orphans, nil
}

// process takes one claim to a recorded decision. It is idempotent: run again
// after a crash at any point, it reaches the same decision without a second
// commit. pf, when not nil, is the claim read and validated ahead of its
// turn (prefetch.go); it is used only when the read ahead succeeded.
func (g *Gate) process(in *inbox, pol *policy.Policy, id string, pf *prefetched) (*Decision, error) {
	if pf != nil && pf.err != nil {
		pf = nil // read again now: the same path as without a read ahead
	}
	var err error
	var c Claim
	if pf != nil {
		c = pf.c
	} else if c, err = g.claimRecord(id); err != nil {
		return nil, err
	}
	if d, err := g.ledger.Load(id); err != nil {
		return nil, err
	} else if d != nil {
		return d, g.finish(in, c, d, nil)
	}
	d := &Decision{ID: id, Session: c.Session, Draft: c.Name, DraftRaw: c.NameRaw, FirstSeen: c.FirstSeen}
	var rr readResult
	if pf != nil {
		rr = pf.rr
	} else if rr, err = g.readClaim(id, pol.MaxDraftBytes); err != nil {
		return nil, err
	}
	if rr.Retry {
		return nil, errRetry
	}
	if rr.Reject != nil {
		d.State, d.Reasons = StateRejected, []note.Finding{*rr.Reject}
		return d, g.finish(in, c, d, nil)
	}
	d.SHA256, d.Owner = rr.Sum, rr.Owner
	// The change time that counts is the one in the session folder, before
	// the gate's rename (which sets it): the claim's, when it is the same
	// inode the gate read.
	if d.Owner != nil && c.Stat != nil && c.Stat.Ino == d.Owner.Ino {
		d.Owner.Ctime = c.Stat.Ctime
	}
	// A commit of this very claim may already be on the branch (a gate
	// killed after publishing it, before recording the decision). It is
	// found by the draft id before anything is judged again: the verdict
	// against a HEAD that holds the note itself would differ.
	if _, head, err := g.repo.Head(); err != nil {
		return nil, err
	} else if done, err := g.commits.AdoptEarlierCommit(head, d); err != nil {
		return nil, err
	} else if done {
		d.AutoPromoted = d.Reviewer == ""
		if err := g.finish(in, c, d, nil); err != nil {
			return nil, err
		}
		if d.AutoPromoted {
			g.countAuto(d)
		}
		return d, nil
	}
	if g.commits.RecordingSum(rr.Sum) {
		g.commits.DrainRecords() // the same content is being recorded: see it first
	}
	if g.commits.PendingSum(rr.Sum) {
		// The same content is promoted in the open group: publish it first,
		// so this draft is found as its duplicate.
		if err := g.commits.Flush(); err != nil {
			return nil, err
		}
	}
	prior, err := g.ledger.LoadSeen(rr.Sum)
	if err != nil {
		return nil, err
	}
	if prior != nil && prior.ID != id {
		if d.DuplicatePrivate, err = g.privatePrior(prior, c.Session); err != nil { // dupes.go
			return nil, err
		}
		d.State, d.DuplicateOf = prior.State, prior.ID
		if prior.State == StatePending {
			g.ledger.AddDup(prior.ID, d.ID)
		}
		if prior.State == StateRejected {
			d.Reasons = []note.Finding{{Rule: "resubmitted", Severity: note.Error,
				Message: fmt.Sprintf("identical content was rejected before (decision %s); see that decision's reasons", prior.ID)}}
		} else {
			d.Reasons = []note.Finding{{Rule: "duplicate", Severity: note.Info,
				Message: fmt.Sprintf("identical content was already %s (decision %s); nothing new to do", prior.State, prior.ID)}}
			if pd, _ := g.ledger.Load(prior.ID); pd != nil {
				d.Path, d.Commit = pd.Path, pd.Commit
			}
		}
		return d, g.finish(in, c, d, nil)
	}
	var res validate.Result
	if pf != nil && pf.validated {
		res = pf.res
	} else if res, err = validate.DraftNamed(c.Name, rr.Bytes); err != nil {
		return nil, err
	}
	g.verifyAsync = g.verify != nil
	v, o, err := g.judgeOwned(in, pol, c.Session, c.Name, res, d.Owner)
	g.verifyAsync = false
	if err != nil {
		return nil, err // decide.ErrVerifying: still claimed, decided by a later pass
	}
	d.State, d.Reasons, d.Type, d.Risk, d.Confidence, d.Origin = v.State, v.Reasons, v.Type, v.Risk, v.Confidence, o.String()
	switch v.State {
	case StateRejected:
		return d, g.finish(in, c, d, nil)
	case StatePending:
		d.Path = decide.DestPath(v.Folder, res.Meta.Title, c.Name, rr.Sum)
		return d, g.finish(in, c, d, rr.Bytes)
	}
	d.AutoPromoted = true
	if err := g.commits.Promote(pol, d, res, v, o, ""); err != nil {
		var refused *validate.RefusedError
		if !errors.As(err, &refused) {
			return nil, err
		}
		// The commit-time scan (H3) refused what would be written.
		d.State, d.AutoPromoted, d.Path = StateRejected, false, ""
		d.Reasons = append(d.Reasons, refused.Findings...)
		return d, g.finish(in, c, d, nil)
	}
	if err := g.finish(in, c, d, nil); err != nil {
		return nil, err
	}
	g.countAuto(d)
	return d, nil
}

// judgeDraft takes a validated draft to a verdict against the branch HEAD,
// with the session's origin and the gate's own rate counts. It does not know
// who wrote the draft's file: the session's origin is taken as is (used
// where only the rules a draft trips matter); decisions use judgeOwned.
func (g *Gate) judgeDraft(in *inbox, pol *policy.Policy, sess string, res validate.Result) (decide.Verdict, origin.Origin, error) {
	return g.judgeOrigin(in, pol, sess, "", res, g.originOf(in, pol, sess))
}

// judgeOwned is judgeDraft for a draft whose file owner the gate recorded
// when it read it: the session's origin counts for the draft only when the
// session wrote it (Origin.ForDraft).
// name is the draft's file name in the inbox.
func (g *Gate) judgeOwned(in *inbox, pol *policy.Policy, sess, name string, res validate.Result, own *origin.DraftOwner) (decide.Verdict, origin.Origin, error) {
	return g.judgeOrigin(in, pol, sess, name, res, g.originOf(in, pol, sess).ForDraft(own))
}

// decideEnv is what decide's evidence step takes from the gate: the
// repository at head, the clock, and the verifiers (the verify pool when
// verifiers run outside the decision, else a runner in it).
func (g *Gate) decideEnv(head repo.Hash) *decide.Env {
	env := &decide.Env{Repo: g.repo, Head: head, Now: g.now, NoVerify: g.showing,
		Runner: func() decide.VerifyFunc { return verify.NewRunner(g.vaultDir).Run }}
	if g.verifyAsync {
		env.Pool = g.verify.Result
	}
	return env
}

func (g *Gate) judgeOrigin(in *inbox, pol *policy.Policy, sess, name string, res validate.Result, o origin.Origin) (decide.Verdict, origin.Origin, error) {
	_, head, err := g.repo.Head()
	if err != nil {
		return decide.Verdict{}, origin.Origin{}, err
	}
	ji := &decide.Input{Policy: pol, Result: res, Session: sess, Name: name, Origin: o,
		Head: func(p string) ([]byte, error) { return g.repo.FileAt(head, p) }, Env: g.decideEnv(head)}
	if pol.AutoPromote != nil {
		r, err := g.autoRates()
		if err != nil {
			return decide.Verdict{}, o, err
		}
		ji.SessionAuto, ji.DayAuto = r.session[sess], r.day[g.now().UTC().Format(time.DateOnly)]
	}
	v, err := decide.Judge(ji)
	return v, o, err
}

// rates counts auto-promotions per session and per UTC day, from the gate's
// recorded decisions (loaded once, then kept up to date as it promotes).
type rates struct {
	session map[string]int
	day     map[string]int
}

func (g *Gate) autoRates() (*rates, error) {
	if g.rates != nil {
		return g.rates, nil
	}
	all, err := g.Decisions()
	if err != nil {
		return nil, err
	}
	r := &rates{session: map[string]int{}, day: map[string]int{}}
	for _, d := range all {
		if d.AutoPromoted && d.State == StatePromoted && d.DuplicateOf == "" {
			r.session[d.Session]++
			r.day[d.Decided.UTC().Format(time.DateOnly)]++
		}
	}
	g.rates = r
	return r, nil
}

func (g *Gate) countAuto(d *Decision) {
	if g.rates != nil {
		g.rates.session[d.Session]++
		day := d.Decided
		if day.IsZero() {
			day = g.now() // decided in an open group (recorded at its flush)
		}
		g.rates.day[day.UTC().Format(time.DateOnly)]++
	}
}

// note appends an audit entry whose loss must not stop the gate (the
// decision entries are appended strictly); a failure is logged.
func (g *Gate) note(kind string, data any) {
	if _, err := g.audit.Append(kind, data); err != nil {
		g.log.Error("audit append failed", "kind", kind, "err", err)
	}
}

// signature is the gate identity from policy, sanitised for a commit header.
func (g *Gate) signature(pol *policy.Policy) repo.Signature {
	return repo.Signature{Name: decide.SanitizeLine(pol.GateName), Email: decide.SanitizeLine(pol.GateEmail), When: g.now().UTC().Truncate(time.Second)}
}

// finish records a decision and cleans up the claim, in an order that a
// crash at any point can resume: decision, seen index, pending copy, audit,
// receipt, then removal of the claim.
func (g *Gate) finish(in *inbox, c Claim, d *Decision, pendingBytes []byte) error {
	if g.commits.DeferFinish(d, func() error { return g.finish(in, c, d, nil) }) {
		return nil // its commit is in the open group: recorded once published
	}
	if g.commits.RecordAsync(d, func() error { return g.record(d, pendingBytes) }, g.cleanupFor(in, c, d)) {
		return nil // recorded off the pass's goroutine (commit/asyncrecord.go)
	}
	if err := g.record(d, pendingBytes); err != nil {
		return err
	}
	cleanup := g.cleanupFor(in, c, d)
	if g.commits.DeferCleanup(cleanup) {
		return nil // after the group's barrier: the decision is durable first
	}
	return cleanup()
}

// record writes d's decision: pending copy, audit entry, decision, seen
// index; for a decision already recorded, the seen index a killed gate may
// have missed.
func (g *Gate) record(d *Decision, pendingBytes []byte) error {
	if !d.Decided.IsZero() {
		if d.SHA256 != "" && d.DuplicateOf == "" {
			// Decided by a gate killed before the seen record: record it
			// now (kept when it is there).
			return g.ledger.LinkSeen(d)
		}
		return nil
	}
	d.Decided = g.now().UTC()
	if pendingBytes != nil {
		if err := durable.WriteAtomic(g.statePath(pendingDir, d.ID+".draft"), pendingBytes, 0o600); err != nil {
			return err
		}
	}
	// The audit entry goes first: a crash before the decision record
	// repeats it (at least once), never loses it.
	var rules []string
	for _, r := range d.Reasons {
		rules = append(rules, r.Rule)
	}
	if _, err := g.audit.Append("decision", map[string]any{"id": d.ID, "session": d.Session, "draft": d.Draft, "sha256": d.SHA256,
		"state": d.State, "rules": rules, "path": d.Path, "commit": d.Commit, "duplicate_of": d.DuplicateOf}); err != nil {
		return err
	}
	if err := durable.WriteJSON(g.statePath(decisionsDir, d.ID+".json"), d); err != nil {
		return err
	}
	groupFault("decided")
	if d.SHA256 != "" && d.DuplicateOf == "" {
		if err := g.ledger.LinkSeen(d); err != nil {
			return err
		}
	}
	g.log.Info("decided", "id", d.ID, "state", d.State, "path", d.Path)
	return nil
}

// cleanupFor is the end of finish: the receipt, then removal of the
// marker and of the claimed draft (its claim is live until then).
func (g *Gate) cleanupFor(in *inbox, c Claim, d *Decision) func() error {
	return func() error {
		if err := g.writeReceipt(in, c.Session, c.rawName(), receiptJSON(d)); err != nil {
			g.log.Warn("receipt not written", "id", d.ID, "err", err)
			g.note("receipt-failed", map[string]string{"id": d.ID, "error": err.Error()})
		}
		os.Remove(g.statePath(committingDir, d.ID))
		groupFault("receipted")
		if err := os.RemoveAll(g.statePath(claimsDir, c.ID+".draft")); err != nil {
			return err
		}
		if c.legacy {
			return os.Remove(g.statePath(claimsDir, c.ID+".json"))
		}
		return nil
	}
}

// Receipt is what an agent reads in .receipts/<draft>.json. The gate never
// reads receipts back: its state directory is authoritative.
type Receipt struct {
	Draft       string         `json:"draft"`
	ID          string         `json:"id"`
	State       string         `json:"state"`
	Reasons     []note.Finding `json:"reasons,omitempty"`
	Path        string         `json:"path,omitempty"`
	Commit      string         `json:"commit,omitempty"`
	DuplicateOf string         `json:"duplicate_of,omitempty"`
	SHA256      string         `json:"sha256,omitempty"`
	Decided     time.Time      `json:"decided"`
}

func receiptJSON(d *Decision) []byte {
	r := Receipt{Draft: d.Draft, ID: d.ID, State: d.State, Reasons: d.Reasons, Path: d.Path,
		Commit: d.Commit, DuplicateOf: d.DuplicateOf, SHA256: d.SHA256, Decided: d.Decided}
	redactPrivateDuplicate(d, &r) // dupes.go
	b, _ := json.MarshalIndent(r, "", "  ")
	return append(b, '\n')
}
