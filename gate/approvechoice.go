package gate

// A contradiction is decided, never duplicated (issue 19 item 3): approving
// a held draft whose title or subject names a note in force (or withheld)
// does not put a second note beside it. The reviewer chooses:
//
//   - supersede (ApproveOptions.Supersede, `fedmem review approve
//     --supersede`): the draft promotes with those notes added to its
//     `supersedes`, and the one promotion commit deprecates them
//     (status deprecated, superseded_by the new note);
//   - retitle (ApproveOptions.Title, `--title`): the draft promotes under
//     another title, judged again;
//   - reject (`fedmem review reject`).
//
// Without a choice the approval fails with ErrContradiction, naming the
// notes and the options; nothing is decided.

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/review"
	"github.com/fedmem/fedmem/gate/sweep"
	"github.com/fedmem/fedmem/gate/validate"
	"github.com/fedmem/fedmem/vault/note"
)

// approval is a reviewer's choice and whether it is one of a batch
// (ApproveAll), whose listing shows no note an approval retires — so it
// retires none.
type approval struct {
	review.ApproveOptions
	batch bool
}

// applyChoice applies a retitle to the held draft (re-validated: a title
// is part of what every content check reads).
func (g *Gate) applyChoice(d *Decision, res validate.Result, opts review.ApproveOptions) (validate.Result, error) {
	if opts.Title == "" {
		return res, nil
	}
	if opts.Supersede {
		return res, fmt.Errorf("choose one: --supersede keeps the draft's title and retires the note in force; --title gives the draft another one")
	}
	t := strings.TrimSpace(opts.Title)
	if t == "" || len(t) > 200 || strings.ContainsFunc(t, func(r rune) bool { return r < 0x20 || r == 0x7f }) || decide.CleanSlug(t) == "" {
		return res, fmt.Errorf("title %q is not usable: 1 to 200 characters, no control characters, at least one letter or digit", decide.ClipText(opts.Title))
	}
	if res.Note == nil {
		return res, fmt.Errorf("draft %s has no frontmatter to retitle", d.ID)
	}
	old := res.Meta.Title
	sweep.SetKey(res.Note.Front, "title", decide.Str(t))
	b, err := note.Render(res.Note.Front, res.Note.Body)
	if err != nil {
		return res, err
	}
	nr, err := validate.DraftNamed(d.Draft, b)
	if err != nil {
		return res, err
	}
	if nr.Note == nil || note.HasErrors(nr.Findings) {
		return res, fmt.Errorf("draft %s retitled %q is not valid: %v", d.ID, decide.ClipText(t), nr.Findings)
	}
	d.Reasons = append(d.Reasons, note.Finding{Rule: "reviewer-retitle", Severity: note.Info,
		Message: fmt.Sprintf("the reviewer retitled the draft from %q to %q", decide.ClipText(old), decide.ClipText(t))})
	return nr, nil
}

// decideContradiction checks the approved draft against the notes at HEAD:
// no contradiction, or the reviewer chose to supersede (the notes join the
// draft's `supersedes`, so commit.Engine.Promote deprecates them in its commit);
// otherwise ErrContradiction.
func (g *Gate) decideContradiction(d *Decision, res validate.Result, v *decide.Verdict, opts review.ApproveOptions) (validate.Result, error) {
	_, head, err := g.repo.Head()
	if err != nil {
		return res, err
	}
	hv, err := decide.NewHeadView(g.repo, head)
	if err != nil {
		return res, err
	}
	dest := decide.DestPath(v.Folder, res.Meta.Title, d.Draft, d.SHA256)
	cs, err := decide.Contradictions(res, dest, "", hv)
	if err != nil || len(cs) == 0 {
		return res, err
	}
	if !opts.Supersede {
		return res, decide.ContradictionError(d.ID, cs)
	}
	seq := res.Note.Get("supersedes")
	switch {
	case seq == nil:
		seq = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		res.Note.Front.Content = append(res.Note.Front.Content, decide.Str("supersedes"), seq)
	case seq.Kind == yaml.ScalarNode:
		one := *seq
		*seq = yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{&one}}
	case seq.Kind != yaml.SequenceNode:
		return res, fmt.Errorf("draft %s: `supersedes` is neither a path nor a list; reject it or ask for a clean draft", d.ID)
	}
	seq.Style = 0
	res.Meta.Supersedes = append([]note.Ref(nil), res.Meta.Supersedes...)
	var paths []string
	for _, c := range cs {
		seq.Content = append(seq.Content, decide.Str(c.Path))
		res.Meta.Supersedes = append(res.Meta.Supersedes, note.Ref{Value: c.Path})
		paths = append(paths, c.Path)
	}
	d.Reasons = append(d.Reasons, note.Finding{Rule: "reviewer-supersede", Severity: note.Info,
		Message: fmt.Sprintf("the reviewer chose to supersede %s (deprecated in the promotion's commit)", strings.Join(paths, ", "))})
	return res, nil
}
