package decide

// The evidence step of judge (decide.go): registered in evidenceChecks, fed
// by judgeInput.Env (set by judgeDraft).

import (
	"context"
	"path"
	"strings"
	"time"

	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/vault/note"
	"github.com/fedmem/fedmem/vault/repo"
)

// evidenceEnv is what the evidence step of judge needs from the gate: the
// repository at the HEAD the verdict is taken against, the vault (for
// verifiers) and the clock.
type evidenceEnv struct {
	repo  *repo.Repo
	head  repo.Hash
	vault string
	now   func() time.Time
	// pool, when set, runs the verifiers outside the decision
	// (verifypool.go): a result not there yet is errVerifying.
	pool *verifyPool
	// noVerify: judge without running verifiers (a review show).
	noVerify bool
}

func (g *Gate) evidenceEnv(head repo.Hash) *evidenceEnv {
	env := &evidenceEnv{repo: g.repo, head: head, vault: g.vaultDir, now: g.now, noVerify: g.showing}
	if g.verifyAsync {
		env.pool = g.verify
	}
	return env
}

func init() { evidenceChecks = append(evidenceChecks, evidenceStep) }

// evidenceStep is the evidence check of judge (decide.go): sources,
// conflicts, and — only for a draft nothing else holds — the verifiers.
// It rewrites the draft's `sources` in place with the fingerprints (render
// then writes them) and adds a `verified` entry per verifier that passed.
func evidenceStep(in *judgeInput, v *verdict) error {
	env, res := in.Env, in.Result
	if env == nil || res.Note == nil {
		return nil
	}
	hv, err := newHeadView(env.repo, env.head)
	if err != nil {
		return err
	}
	// The path the note would take: from the title, else from the draft's
	// file name (destPath's own fallback), so a draft without a title is
	// checked against the note at its path too.
	dest := ""
	if cleanSlug(res.Meta.Title) != "" || cleanSlug(strings.TrimSuffix(in.Name, path.Ext(in.Name))) != "" {
		dest = destPath(v.Folder, res.Meta.Title, in.Name, "")
	}
	var run verifyFunc
	pending := false
	if !env.noVerify && !note.HasFlags(v.Reasons) && !note.HasErrors(v.Reasons) && len(in.Policy.VerifiersFor(v.Type)) > 0 {
		if pool := env.pool; pool != nil {
			// Every verifier of the type is started (they run in
			// parallel); the draft waits for all of them.
			run = func(_ context.Context, ver policy.Verifier, draft []byte, srcs []SourceProof) VerifierRun {
				r, ok := pool.result(in.Session, ver, draft, srcs)
				pending = pending || !ok
				return r
			}
		} else {
			run = newVerifierRunner(env.vault).run
		}
	}
	// Verifiers get the draft as the gate parsed it (the same keys and
	// body, re-encoded), before any rewriting.
	draft, err := note.Render(res.Note.Front, res.Note.Body)
	if err != nil {
		return err
	}
	ev, fs, err := checkEvidence(context.Background(), in.Policy, evidenceInput{Res: res, Draft: draft, Folder: v.Folder, Dest: dest}, hv, run)
	if err != nil {
		return err
	}
	if pending {
		return errVerifying
	}
	v.Reasons = append(v.Reasons, fs...)
	lf, err := shapeLinks(in, v.Folder, hv) // shape.go
	if err != nil {
		return err
	}
	v.Reasons = append(v.Reasons, lf...)
	if v.unknown, err = vaultKnows(v.unknown, ev.counted, hv); err != nil { // shapelexicon.go
		return err
	}
	ev.stampNote(res.Note)
	v.Verified = append(v.Verified, ev.verifiedEntries(env.now())...)
	return nil
}
