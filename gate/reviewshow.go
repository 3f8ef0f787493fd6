package gate

import (
	"os/user"
	"path"
	"strconv"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/validate"
)

// What `fedmem review show` gives a human to decide with (issue 19 item 2):
// who wrote the draft, as the gate proved it from the session record (never
// the draft's word), what approving would commit and where, a unified diff
// against every note in force it would replace, supersede or contradict,
// and the state of each source it cites. Everything here is computed from
// the gate's own view (the session record, HEAD); a draft's claims appear
// only as the draft itself.

// ShowContext accompanies a held draft in a show response.
type ShowContext struct {
	Provenance Provenance `json:"provenance"`
	// Target is where approving would write the note (the path the
	// promotion computes from the policy's folder and the title).
	Target string `json:"target,omitempty"`
	// Rendered is the note as an approval would commit it (gate fields
	// included; verified names the approving reviewer as human:<you>).
	Rendered string        `json:"rendered,omitempty"`
	Related  []RelatedNote `json:"related,omitempty"`
	Sources  []SourceState `json:"sources,omitempty"`
	// Previous is the earlier version of this draft (same session and
	// name) a reviewer saw, held or rejected, with the diff to this one
	// (reviewversion.go).
	Previous *PreviousVersion `json:"previous,omitempty"`
	// Verifiers: the approved verifiers' outcomes recorded when the gate
	// decided the draft, and the policy's verifiers that did not run.
	Verifiers []VerifierOutcome `json:"verifiers,omitempty"`
	// Problem says why part of the context could not be computed (a draft
	// no longer valid, say); the rest is still shown.
	Problem string `json:"problem,omitempty"`
}

// Provenance is the session a draft came from, as the gate knows it.
type Provenance struct {
	Session     string   `json:"session"`
	Profile     string   `json:"profile,omitempty"`
	ProfileHash string   `json:"profile_hash,omitempty"`
	UID         int      `json:"uid"`
	User        string   `json:"user,omitempty"`
	Command     []string `json:"command,omitempty"`
	Started     string   `json:"started,omitempty"`
	Ended       string   `json:"ended,omitempty"`
	Workdir     string   `json:"workdir,omitempty"`
	VaultHead   string   `json:"vault_head_start,omitempty"`
	// Origin is the decision's origin word; Meaning says what it means for
	// this draft, Why what failed when the origin is not proven.
	Origin  string `json:"origin"`
	Meaning string `json:"meaning"`
	Why     string `json:"why,omitempty"`
}

// RelatedNote is a note in force a draft would change or stand beside.
type RelatedNote struct {
	Path string `json:"path"`
	// Relation: "same path" (approving replaces its slot), "supersedes"
	// (the draft names it), "contradicts" (same title or subject in force).
	Relation string `json:"relation"`
	Status   string `json:"status,omitempty"`
	// Diff is a unified diff from the note at HEAD to what approving would
	// commit.
	Diff string `json:"diff,omitempty"`
}

// SourceState is one source a draft cites, looked up at HEAD.
type SourceState struct {
	Path    string `json:"path"`
	Blob    string `json:"blob,omitempty"` // its fingerprint at HEAD
	Status  string `json:"status,omitempty"`
	InForce bool   `json:"in_force"`
	Problem string `json:"problem,omitempty"`
}

// OriginMeaning explains an origin word to a reviewer.
func OriginMeaning(origin string) string {
	switch {
	case origin == "" || origin == "unknown":
		return "recorded before the gate kept origins: nothing about the session is proven"
	case origin == "unverified":
		return "the gate could not prove that fedmem-run wrote this session's record: the profile, user and command below are what the record says, not facts; the draft could come from anyone who can write the inbox"
	case strings.HasPrefix(origin, "trusted:"):
		return "fedmem-run wrote the session record (proven by its owner and mode) and the policy's auto_promote trusts profile " + OriginProfile(origin) + ": the draft was held only for the reasons below"
	case strings.HasPrefix(origin, "verified:"):
		return "fedmem-run wrote the session record (proven by its owner and mode) under profile " + OriginProfile(origin) + ", which the policy's auto_promote does not trust: every draft of it waits for a human"
	}
	return "unknown origin word"
}

// showContext computes a held draft's context. Call with g.mu held.
func (g *Gate) showContext(d *Decision, b []byte) *ShowContext {
	c := &ShowContext{Provenance: Provenance{Session: d.Session, Origin: orUnknownOrigin(d.Origin)}}
	c.Provenance.Meaning = OriginMeaning(c.Provenance.Origin)
	pol, err := g.Policy()
	if err != nil {
		c.Problem = "policy: " + err.Error()
		return c
	}
	in, err := g.openInbox()
	if err != nil {
		c.Problem = "inbox: " + err.Error()
		return c
	}
	defer in.Close()
	o := g.originOf(in, pol, d.Session).ForDraft(d.Owner)
	if r := o.Record; r != nil {
		p := &c.Provenance
		p.Profile, p.ProfileHash, p.UID, p.Command, p.Started, p.Ended = r.Profile, r.ProfileHash, r.UID, r.Command, r.Started, r.Ended
		p.Workdir, p.VaultHead = r.Workdir, r.VaultHeadStart
		if u, err := user.LookupId(strconv.Itoa(r.UID)); err == nil {
			p.User = u.Username
		}
	}
	if !o.Verified || !o.Trusted {
		c.Provenance.Why = o.Why
	}
	var names []string
	for _, v := range pol.VerifiersFor(d.Type) {
		names = append(names, v.Name)
	}
	c.Verifiers = verifierOutcomes(d, names)
	if prev, err := g.previousVersion(d, b); err != nil {
		c.Problem = "previous version: " + err.Error()
	} else {
		c.Previous = prev
	}
	res, err := validate.DraftNamed(d.Draft, b)
	if err != nil {
		c.Problem = "draft: " + err.Error()
		return c
	}
	// Judged as an approval would be, but without running the verifiers
	// again (a process under fedmem-run per look at a draft): their
	// recorded outcomes are in c.Verifiers.
	g.showing = true
	v, _, err := g.judgeOwned(in, pol, d.Session, d.Draft, res, d.Owner)
	g.showing = false
	if err != nil {
		c.Problem = "judge: " + err.Error()
		return c
	}
	_, head, err := g.repo.Head()
	if err != nil {
		c.Problem = "HEAD: " + err.Error()
		return c
	}
	content, err := decide.Render(res.Note, pol, v, decide.Provenance{Session: d.Session, Origin: o}, d.FirstSeen, "human:<you>")
	if err != nil {
		c.Problem = "render: " + err.Error()
		return c
	}
	c.Rendered = string(content)
	c.Target = decide.DestPath(v.Folder, res.Meta.Title, d.Draft, d.SHA256)
	hv, err := decide.NewHeadView(g.repo, head)
	if err != nil {
		c.Problem = "HEAD: " + err.Error()
		return c
	}
	seen := map[string]bool{}
	relate := func(p, rel string) {
		if p == "" || seen[p] {
			return
		}
		old, err := g.repo.FileAt(head, p)
		if err != nil || old == nil {
			return
		}
		seen[p] = true
		f := decide.FactsOf(old)
		c.Related = append(c.Related, RelatedNote{Path: p, Relation: rel, Status: statusWord(f.Status),
			Diff: udiff.Unified("a/"+p+" (HEAD)", "b/"+c.Target+" (approved)", string(old), string(content))})
	}
	relate(c.Target, "same path")
	for _, s := range res.Meta.Supersedes {
		relate(path.Clean(strings.TrimPrefix(s.Value, "/")), "supersedes")
	}
	for _, f := range v.Reasons {
		if f.Rule == decide.RuleConflict {
			relate(f.Path, "contradicts")
		}
	}
	for _, s := range res.Meta.Sources {
		p := path.Clean(strings.TrimPrefix(s.Value, "/"))
		st := SourceState{Path: p}
		e, err := hv.Entry(p)
		switch {
		case err != nil:
			st.Problem = err.Error()
		case e == nil || !e.Mode.IsFile():
			st.Problem = "not a file at HEAD"
		default:
			st.Blob = e.Hash.String()
			if f, err := hv.Facts(e.Hash); err == nil {
				st.Status, st.InForce = statusWord(f.Status), f.InForce && !f.Withheld
			}
		}
		c.Sources = append(c.Sources, st)
	}
	return c
}

func statusWord(s string) string {
	if s == "" {
		return "stable (no status)"
	}
	return s
}

func orUnknownOrigin(o string) string {
	if o == "" {
		return "unknown"
	}
	return o
}

// ShowFull is Show with the context a reviewer decides with (ShowContext,
// for a held draft).
func (g *Gate) ShowFull(id string) (*Decision, []byte, *ShowContext, error) {
	d, b, err := g.Show(id)
	if err != nil || d == nil || d.State != StatePending || b == nil {
		return d, b, nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return d, b, g.showContext(d, b), nil
}
