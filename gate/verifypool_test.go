package gate

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fedmem/fedmem/gate/policy"
)

// TestSlowVerifierDoesNotBlockPass (issue 24 item 5): the policy's
// verifier for Facts does not end on session v-1's draft until the test
// releases it, and ends at once on session v-2's. With the verifiers run
// outside the decision (verifypool.go, as `gate run` sets it), a pass
// starts both runs and returns — releasing the gate's lock — with both
// drafts claimed and undecided (deferred); once v-2's run ended, the next
// pass decides v-2's draft while v-1's verifier still runs; once that one
// ended, the next decides v-1's, with its result (the pass in its
// reasons), and no verifier ran twice. On the code before, the pass ran
// the verifiers inside the decision, one at a time, and did not return
// while v-1's was held (the test's deadline).
func TestSlowVerifierDoesNotBlockPass(t *testing.T) {
	v := trustVault(t)
	setPolicy(t, v, trustPolicy()+"verifiers:\n  slow-check:\n    types: [Fact]\n    command: [/bin/true]\n")
	put(t, session(t, v, "v-1"), "a.md", "---\ntype: Fact\ntitle: Slow to verify\nsources: [10-projects/src.md]\n---\nchecked\n")
	put(t, session(t, v, "v-2"), "b.md", "---\ntype: Fact\ntitle: Quick to verify\nsources: [10-projects/src.md]\n---\nplain\n")
	g := openGate(t, v)
	release := make(chan struct{})
	started := make(chan struct{}, 4)
	var runs atomic.Int32
	g.verify = newVerifyPool(context.Background(), func(ctx context.Context, ver policy.Verifier, draft []byte, srcs []SourceProof) VerifierRun {
		runs.Add(1)
		if strings.Contains(string(draft), "checked") {
			started <- struct{}{}
			<-release
		}
		return VerifierRun{Name: ver.Name, Profile: "strict", Passed: true, ExitCode: 0, OutputSHA256: "00"}
	})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
		g.verify.wait()
	}()
	type result struct {
		s   *Summary
		err error
	}
	pass := func() *Summary {
		t.Helper()
		ch := make(chan result, 1)
		go func() { s, err := g.Once(); ch <- result{s, err} }()
		select {
		case r := <-ch:
			if r.err != nil || len(r.s.Errors) > 0 {
				t.Fatalf("pass: %v %v", r.err, r.s.Errors)
			}
			return r.s
		case <-time.After(60 * time.Second):
			close(release) // let the blocked pass end, then fail
			<-ch
			t.Fatalf("the pass did not return in 60 s while v-1's verifier was held: the verifier blocks the pass (and the gate's lock)")
		}
		return nil
	}
	decided := func(s *Summary, sess string, deferred int) {
		t.Helper()
		if len(s.Decisions) != 1 || s.Decisions[0].Session != sess || s.Decisions[0].State != StatePromoted || s.Deferred != deferred {
			t.Fatalf("want %s's draft promoted and %d deferred; got %+v, deferred %d", sess, deferred, s.Decisions, s.Deferred)
		}
	}
	if s := pass(); len(s.Decisions) != 0 || s.Deferred != 2 {
		t.Fatalf("first pass: want both drafts deferred (their verifiers started); got %+v, deferred %d", s.Decisions, s.Deferred)
	}
	<-started       // v-1's verifier is running (and held)
	<-g.verify.ends // v-2's ended (Run starts a pass on this)
	decided(pass(), "v-2", 1)
	close(release)
	<-g.verify.ends // v-1's ended
	s := pass()
	decided(s, "v-1", 0)
	if n := runs.Load(); n != 2 {
		t.Errorf("the verifier ran %d times, want 2 (once per draft)", n)
	}
	d, err := g.loadDecision(s.Decisions[0].ID)
	if err != nil || d == nil || len(findingsWith(d.Reasons, RuleVerifierPassed)) != 1 {
		t.Fatalf("v-1's decision should carry the verifier's pass: %+v %v", d, err)
	}
	checkRepo(t, v)
}
