package gate

import (
	"os/user"
	"path"
	"strconv"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/ledger"
	"github.com/fedmem/fedmem/gate/review"
	"github.com/fedmem/fedmem/gate/validate"
)

// What `fedmem review show` gives a human to decide with (issue 19 item 2):
// who wrote the draft, as the gate proved it from the session record (never
// the draft's word), what approving would commit and where, a unified diff
// against every note in force it would replace, supersede or contradict,
// and the state of each source it cites. Everything here is computed from
// the gate's own view (the session record, HEAD); a draft's claims appear
// only as the draft itself.

// showContext computes a held draft's context. Call with g.mu held.
func (g *Gate) showContext(d *Decision, b []byte) *review.ShowContext {
	c := &review.ShowContext{Provenance: review.Provenance{Session: d.Session, Origin: orUnknownOrigin(d.Origin)}}
	c.Provenance.Meaning = review.OriginMeaning(c.Provenance.Origin)
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
	c.Verifiers = ledger.VerifierOutcomes(d, names)
	if prev, err := g.ledger.PreviousVersion(d, b); err != nil {
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
		c.Related = append(c.Related, review.RelatedNote{Path: p, Relation: rel, Status: statusWord(f.Status),
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
		st := review.SourceState{Path: p}
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
func (g *Gate) ShowFull(id string) (*Decision, []byte, *review.ShowContext, error) {
	d, b, err := g.Show(id)
	if err != nil || d == nil || d.State != StatePending || b == nil {
		return d, b, nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	defer g.refreshView() // HEAD may have moved: the sandbox's view follows (viewhost.go)
	return d, b, g.showContext(d, b), nil
}
