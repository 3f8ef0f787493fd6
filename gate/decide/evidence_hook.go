package decide

// The evidence step of judge (decide.go): registered in evidenceChecks, fed
// by Input.Env (set by the gate's judgeDraft).

import (
	"context"
	"errors"
	"path"
	"strings"
	"time"

	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/vault/note"
	"github.com/fedmem/fedmem/vault/repo"
)

// Env is what the evidence step of Judge needs from the gate: the
// repository at the HEAD the verdict is taken against, the verifiers and the
// clock.
type Env struct {
	Repo *repo.Repo
	Head repo.Hash
	Now  func() time.Time
	// Pool, when set, answers for verifiers run outside the decision (the
	// gate's verify pool): ok false is a result not there yet, and the
	// evidence step returns ErrVerifying.
	Pool func(session string, v policy.Verifier, draft []byte, sources []SourceProof) (r VerifierRun, ok bool)
	// Runner, when Pool is nil, gives the run of verifiers in the decision.
	Runner func() VerifyFunc
	// NoVerify: judge without running verifiers (a review show).
	NoVerify bool
}

// ErrVerifying: a verifier the decision needs is running (or waits for a
// slot); the draft stays claimed and is decided by a later pass.
var ErrVerifying = errors.New("verifier running")

func init() { evidenceChecks = append(evidenceChecks, evidenceStep) }

// evidenceStep is the evidence check of judge (decide.go): sources,
// conflicts, and — only for a draft nothing else holds — the verifiers.
// It rewrites the draft's `sources` in place with the fingerprints (render
// then writes them) and adds a `verified` entry per verifier that passed.
func evidenceStep(in *Input, v *Verdict) error {
	env, res := in.Env, in.Result
	if env == nil || res.Note == nil {
		return nil
	}
	hv, err := NewHeadView(env.Repo, env.Head)
	if err != nil {
		return err
	}
	// The path the note would take: from the title, else from the draft's
	// file name (destPath's own fallback), so a draft without a title is
	// checked against the note at its path too.
	dest := ""
	if CleanSlug(res.Meta.Title) != "" || CleanSlug(strings.TrimSuffix(in.Name, path.Ext(in.Name))) != "" {
		dest = DestPath(v.Folder, res.Meta.Title, in.Name, "")
	}
	var run VerifyFunc
	pending := false
	if !env.NoVerify && !note.HasFlags(v.Reasons) && !note.HasErrors(v.Reasons) && len(in.Policy.VerifiersFor(v.Type)) > 0 {
		if pool := env.Pool; pool != nil {
			// Every verifier of the type is started (they run in
			// parallel); the draft waits for all of them.
			run = func(_ context.Context, ver policy.Verifier, draft []byte, srcs []SourceProof) VerifierRun {
				r, ok := pool(in.Session, ver, draft, srcs)
				pending = pending || !ok
				return r
			}
		} else {
			run = env.Runner()
		}
	}
	// Verifiers get the draft as the gate parsed it (the same keys and
	// body, re-encoded), before any rewriting.
	draft, err := note.Render(res.Note.Front, res.Note.Body)
	if err != nil {
		return err
	}
	ev, fs, err := CheckEvidence(context.Background(), in.Policy, EvidenceInput{Res: res, Draft: draft, Folder: v.Folder, Dest: dest}, hv, run)
	if err != nil {
		return err
	}
	if pending {
		return ErrVerifying
	}
	v.Reasons = append(v.Reasons, fs...)
	lf, err := shapeLinks(in, v.Folder, hv) // shapehook.go
	if err != nil {
		return err
	}
	v.Reasons = append(v.Reasons, lf...)
	if v.unknown, err = vaultKnows(v.unknown, ev.counted, hv); err != nil { // shapehook.go
		return err
	}
	ev.stampNote(res.Note)
	v.Verified = append(v.Verified, ev.verifiedEntries(env.Now())...)
	return nil
}
