package gate

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/gate/sweep"
	"github.com/fedmem/fedmem/vault"
)

// Reviewer changes (issue 19 item 5): the vault's policy is the gate's to
// commit, like every protected path, so adding or removing a reviewer is a
// gate commit asked for over the review socket by a current reviewer (the
// kernel says who, SO_PEERCRED), never a hand edit of the gate's work
// tree. The commit names the change and who asked in trailers and is in
// the audit log; the rest of policy.yaml (comments, order) is kept.

// ErrLastReviewer refuses a change that would leave no reviewer.
var ErrLastReviewer = errors.New("a policy needs at least one reviewer")

// EditReviewers adds (op "add") or removes (op "remove") a reviewer — a user
// name or a numeric uid — in 00-global/policy.yaml at HEAD, by one gate
// commit. by is the reviewer who asked. It returns the commit and the
// reviewers now in force.
func (g *Gate) EditReviewers(op, name, by string) (string, []string, error) {
	if op != "add" && op != "remove" {
		return "", nil, fmt.Errorf("reviewers: unknown change %q (add, remove)", op)
	}
	if _, err := strconv.Atoi(name); err != nil && !validReviewer(name) {
		return "", nil, fmt.Errorf("reviewer %q is not a user name or uid the policy can hold", decide.Clip(name))
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	defer g.refreshView() // HEAD may have moved: the sandbox's view follows (viewhost.go)
	e := g.sweeper()
	if err := e.Finish(); err != nil {
		return "", nil, err
	}
	branch, head, err := g.repo.Head()
	if err != nil {
		return "", nil, err
	}
	old, err := g.repo.FileAt(head, vault.PolicyFile)
	if err != nil {
		return "", nil, err
	}
	if old == nil {
		return "", nil, fmt.Errorf("%s is not in HEAD: nothing to edit (fedmem init writes it)", vault.PolicyFile)
	}
	updated, now, err := editReviewers(old, op, name)
	if err != nil {
		return "", nil, err
	}
	pol, err := policy.Parse(vault.PolicyFile, updated)
	if err != nil {
		return "", nil, fmt.Errorf("the edited policy does not load (nothing committed): %w", err)
	}
	ch := []change{{Path: vault.PolicyFile, Content: updated}}
	verb := map[string]string{"add": "add reviewer", "remove": "remove reviewer"}[op]
	msg := fmt.Sprintf("fedmem: policy: %s %s\n\nFedmem-Policy: reviewers %s %s\nFedmem-Reviewer: %s\n", verb, name, op, name, by)
	h, err := e.Commit(pol, branch, head, sweep.Move{Kind: "policy", Note: vault.PolicyFile, Changes: ch, Msg: msg,
		Audit: map[string]string{"change": "reviewers " + op, "reviewer": name, "by": by}})
	if err != nil {
		return "", nil, err
	}
	g.log.Info("policy", "change", "reviewers "+op, "reviewer", name, "by", by, "commit", h)
	return h, now, e.Done()
}

// editReviewers changes the top-level reviewers list of a policy document,
// keeping the rest of it (comments, order) as written.
func editReviewers(src []byte, op, name string) ([]byte, []string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", vault.PolicyFile, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, nil, fmt.Errorf("%s: not a mapping", vault.PolicyFile)
	}
	m := doc.Content[0]
	var seq *yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "reviewers" {
			seq = m.Content[i+1]
		}
	}
	if seq == nil {
		seq = &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		m.Content = append(m.Content, decide.Str("reviewers"), seq)
	}
	if seq.Kind != yaml.SequenceNode {
		return nil, nil, fmt.Errorf("%s: reviewers is not a list", vault.PolicyFile)
	}
	var names []string
	for _, n := range seq.Content {
		names = append(names, n.Value)
	}
	i := slices.Index(names, name)
	switch {
	case op == "add" && i >= 0:
		return nil, nil, fmt.Errorf("%s is already a reviewer", name)
	case op == "add":
		seq.Content = append(seq.Content, decide.Str(name))
		names = append(names, name)
	case i < 0:
		return nil, nil, fmt.Errorf("%s is not a reviewer (reviewers: %v)", name, names)
	case len(names) == 1:
		return nil, nil, fmt.Errorf("%w: add another before removing %s", ErrLastReviewer, name)
	default:
		seq.Content = slices.Delete(seq.Content, i, i+1)
		names = slices.Delete(names, i, i+1)
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, nil, err
	}
	return b.Bytes(), names, enc.Close()
}
