package gate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/ledger"
	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/gate/validate"
	"github.com/fedmem/fedmem/gate/verify"
)

// TestShowResubmittedDraftDiff: an agent rewrites a draft a reviewer
// rejected ("cite a source"); show of the new version names the rejected
// one (state, reviewer, reason) and diffs it against this one. Rewritten
// again while held, the next version diffs against the held one. A draft
// of the same name in another session is never taken for an earlier
// version. On the old code show had no previous version, and a rejection
// dropped the bytes it would need.
func TestShowResubmittedDraftDiff(t *testing.T) {
	v := newVault(t)
	setPolicy(t, v, "version: 1\nreviewers: [alice]\n"+`verifiers:
  region-check:
    types: [Fact]
    command: [/bin/false]
`)
	s1, s2 := session(t, v, "s-1"), session(t, v, "s-2")
	g, err := Open(Options{Vault: v, AllowSameUser: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	held := func(dir, body string) Decision {
		t.Helper()
		put(t, dir, "r.md", body)
		d := decisionFor(t, once(t, g), "r.md")
		if d.State != StatePending {
			t.Fatalf("not held: %+v", d)
		}
		return d
	}
	other := held(s2, "---\ntype: Fact\ntitle: Region\n---\nAnother session's text.\n")
	first := held(s1, "---\ntype: Fact\ntitle: Region\n---\nProduction runs in eu-west-1.\n")
	if _, _, c, err := g.ShowFull(first.ID); err != nil || c.Previous != nil {
		t.Fatalf("a first version shows a previous one: %v %+v", err, c.Previous)
	}
	if _, err := g.RejectPending(first.ID, "alice", "cite a source"); err != nil {
		t.Fatal(err)
	}
	second := held(s1, "---\ntype: Fact\ntitle: Region\n---\nProduction runs in eu-west-1 (see the runbook).\n")
	_, _, c, err := g.ShowFull(second.ID)
	if err != nil || c == nil {
		t.Fatalf("show: %v", err)
	}
	p := c.Previous
	if p != nil {
		t.Logf("diff:\n%s", p.Diff)
	}
	if p == nil || p.ID != first.ID || p.State != StateRejected || p.Reviewer != "alice" || p.Reason != "cite a source" {
		t.Fatalf("previous version %+v; want the rejected first one", p)
	}
	for _, want := range []string{"-Production runs in eu-west-1.", "+Production runs in eu-west-1 (see the runbook).", "a/r.md (rejected, " + first.ID + ")"} {
		if !strings.Contains(p.Diff, want) {
			t.Errorf("diff lacks %q:\n%s", want, p.Diff)
		}
	}
	if strings.Contains(p.Diff, "Another session") {
		t.Errorf("the diff took another session's draft:\n%s", p.Diff)
	}
	third := held(s1, "---\ntype: Fact\ntitle: Region\n---\nProduction runs in eu-west-2.\n")
	if _, _, c, err = g.ShowFull(third.ID); err != nil || c.Previous == nil || c.Previous.ID != second.ID || c.Previous.State != StatePending ||
		!strings.Contains(c.Previous.Diff, "+Production runs in eu-west-2.") {
		t.Fatalf("third version: %v %+v; want the held second as previous", err, c.Previous)
	}
	if _, _, c, err = g.ShowFull(other.ID); err != nil || c.Previous != nil {
		t.Errorf("the other session's draft has a previous version: %v %+v", err, c.Previous)
	}
	// Held for no evidence before the verifiers: show says they did not run.
	if len(c.Verifiers) != 1 || c.Verifiers[0].Name != "region-check" || c.Verifiers[0].Outcome != "not run" {
		t.Errorf("verifiers %+v; want region-check not run", c.Verifiers)
	}
}

// TestVerifierOutcomesFromReasons: the outcomes show gives are the ones
// checkEvidence recorded (passed, failed with its exit and output,
// timed out), by verifier name.
func TestVerifierOutcomesFromReasons(t *testing.T) {
	v := trustVault(t)
	humanCommit(t, v, map[string]string{"10-projects/region.md": "---\ntype: Reference\ntitle: Deploy region rules\n---\nWe deploy to eu-west-1.\n"})
	g := openGate(t, v)
	_, head, err := g.repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	hv, err := decide.NewHeadView(g.repo, head)
	if err != nil {
		t.Fatal(err)
	}
	pol := &policy.Policy{Verifiers: map[string]policy.Verifier{"ok-check": {Name: "ok-check", Types: []string{"Fact"}}, "bad-check": {Name: "bad-check", Types: []string{"Fact"}}, "slow-check": {Name: "slow-check", Types: []string{"Fact"}}}}
	res, err := validate.DraftNamed("x.md", []byte("---\ntype: Fact\ntitle: Deploy region\nsources: [10-projects/region.md]\n---\nWe deploy to eu-west-1.\n"))
	if err != nil {
		t.Fatal(err)
	}
	run := func(_ context.Context, pv policy.Verifier, _ []byte, _ []decide.SourceProof) decide.VerifierRun {
		switch pv.Name {
		case "ok-check":
			return decide.VerifierRun{Name: pv.Name, Passed: true, OutputSHA256: "aa"}
		case "bad-check":
			return decide.VerifierRun{Name: pv.Name, ExitCode: 3, Output: "contract broken", OutputSHA256: "bb"}
		}
		return decide.VerifierRun{Name: pv.Name, TimedOut: true, OutputSHA256: "cc"}
	}
	_, fs, err := decide.CheckEvidence(context.Background(), pol, decide.EvidenceInput{Res: res, Folder: "20-domains"}, hv, run)
	if err != nil {
		t.Fatal(err)
	}
	got := ledger.VerifierOutcomes(&Decision{Reasons: fs}, []string{"ok-check", "bad-check", "slow-check", "later-check"})
	want := map[string]string{"ok-check": "passed", "bad-check": "failed", "slow-check": "timeout", "later-check": "not run"}
	if len(got) != len(want) {
		t.Fatalf("outcomes %+v", got)
	}
	for _, o := range got {
		if want[o.Name] != o.Outcome {
			t.Errorf("%s: %s, want %s (%s)", o.Name, o.Outcome, want[o.Name], o.Detail)
		}
	}
	for _, o := range got {
		if o.Name == "bad-check" && !strings.Contains(o.Detail, "contract broken") {
			t.Errorf("failed verifier's detail lacks its output: %s", o.Detail)
		}
	}
}

// TestShowRunsNoVerifier: show judges a held draft as an approval would,
// but never runs the policy's verifiers again — each look at a draft held
// by a failed verifier started one more process under fedmem-run (here a
// stand-in that counts its runs and fails). Show gives the outcome the
// gate recorded instead.
func TestShowRunsNoVerifier(t *testing.T) {
	v := trustVault(t)
	humanCommit(t, v, map[string]string{"10-projects/region.md": "---\ntype: Reference\ntitle: Deploy region rules\n---\nWe deploy to eu-west-1.\n"})
	setPolicy(t, v, trustPolicy()+"verifiers:\n  region-check:\n    types: [Fact]\n    command: [/bin/true]\n")
	dir := t.TempDir()
	count := filepath.Join(dir, "runs")
	fake := filepath.Join(dir, "fedmem-run")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho run >> "+count+"\necho 'verifier stand-in: no'\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(verify.FedmemRunEnv, fake)
	runs := func() int {
		b, _ := os.ReadFile(count)
		return strings.Count(string(b), "run\n")
	}
	put(t, session(t, v, "vr-1"), "r.md", "---\ntype: Fact\ntitle: Deploy region\nsources: [10-projects/region.md]\n---\nWe deploy to eu-west-1.\n")
	g := openGate(t, v)
	d := decisionFor(t, once(t, g), "r.md")
	if d.State != StatePending || !hasRule(d, decide.RuleVerifierFailed) || runs() != 1 {
		t.Fatalf("want held by the failed verifier after one run: %+v, %d runs", d, runs())
	}
	for i := 0; i < 3; i++ {
		_, _, c, err := g.ShowFull(d.ID)
		if err != nil || c == nil {
			t.Fatal(err)
		}
		if len(c.Verifiers) != 1 || c.Verifiers[0].Name != "region-check" || c.Verifiers[0].Outcome != "failed" {
			t.Fatalf("show's verifiers %+v; want the recorded failure", c.Verifiers)
		}
	}
	if n := runs(); n != 1 {
		t.Errorf("the verifier ran %d times; show ran it again", n)
	}
}
