package gate

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/gate/verify"
	"github.com/fedmem/fedmem/test/testutil"
)

// TestSlowVerifierDoesNotBlockPass (issue 24 item 5): the policy's
// verifier for Facts does not end on session v-1's draft until the test
// releases it, and ends at once on session v-2's. With the verifiers run
// outside the decision (gate/verify.Pool, as `gate run` sets it), a pass
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
	g.verify = verify.NewPool(context.Background(), func(ctx context.Context, ver policy.Verifier, draft []byte, srcs []decide.SourceProof) decide.VerifierRun {
		runs.Add(1)
		if strings.Contains(string(draft), "checked") {
			started <- struct{}{}
			<-release
		}
		return decide.VerifierRun{Name: ver.Name, Profile: "strict", Passed: true, ExitCode: 0, OutputSHA256: "00"}
	})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
		g.verify.Wait()
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
	<-started         // v-1's verifier is running (and held)
	<-g.verify.Ends() // v-2's ended (Run starts a pass on this)
	decided(pass(), "v-2", 1)
	close(release)
	<-g.verify.Ends() // v-1's ended
	s := pass()
	decided(s, "v-1", 0)
	if n := runs.Load(); n != 2 {
		t.Errorf("the verifier ran %d times, want 2 (once per draft)", n)
	}
	d, err := g.ledger.Load(s.Decisions[0].ID)
	if err != nil || d == nil || len(findingsWith(d.Reasons, decide.RuleVerifierPassed)) != 1 {
		t.Fatalf("v-1's decision should carry the verifier's pass: %+v %v", d, err)
	}
	checkRepo(t, v)
}

// TestGateRunSlowVerifierRealSandbox: the same through Run and real
// verifiers under the real fedmem-run. The policy's verifier for Facts
// waits, on session v-1's draft, until a file named release appears in
// its working directory (the test makes it once v-2's draft has its
// receipt), and passes at once on v-2's. v-1's draft is written first and
// its verifier seen running before v-2's draft is written: v-2's draft
// must be decided while v-1's verifier still runs, then v-1's promoted
// with the verifier's pass. On the code before, Run's pass held the
// gate's lock inside v-1's verifier and v-2's draft waited (the deadline).
func TestGateRunSlowVerifierRealSandbox(t *testing.T) {
	testutil.RequireRoot(t)
	bins := testutil.Binaries(t)
	t.Setenv(verify.FedmemRunEnv, bins.FedmemRun)
	tmp := testutil.TempDir(t)
	t.Setenv(verify.VerifyTmpEnv, tmp)
	v := sandboxVault(t)
	humanCommit(t, v, map[string]string{"10-projects/src.md": "---\ntype: Reference\ntitle: Source\n---\nThe system as it is.\n"})
	setPolicy(t, v, trustPolicy()+"verifiers:\n  hold-check:\n    types: [Fact]\n    command: [/bin/sh, -c, 'grep -q slowly \"$1\" || exit 0; while [ ! -e release ]; do sleep 0.1; done; echo released', hold-check]\n    timeout: 120s\n")
	g := openGate(t, v)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	// The passes' outcomes, for the failure message: a deadline below
	// says what the gate was doing meanwhile, not only that it was late.
	var seenMu sync.Mutex
	var seen []string
	go func() {
		done <- g.Run(ctx, 200*time.Millisecond, func(s *Summary, err error) {
			if s == nil || (len(s.Decisions) == 0 && s.Deferred == 0 && len(s.Errors) == 0 && err == nil) {
				return
			}
			seenMu.Lock()
			defer seenMu.Unlock()
			seen = append(seen, fmt.Sprintf("%s: decisions %d deferred %d errors %v err %v timing %+v", time.Now().Format("15:04:05.000"), len(s.Decisions), s.Deferred, s.Errors, err, s.Timing))
		})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	// waitFor polls for a condition the gate makes true, up to a deadline.
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				seenMu.Lock()
				defer seenMu.Unlock()
				t.Fatalf("%s: not within 90 s; the passes that did something:\n%s", what, strings.Join(seen, "\n"))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	s1, s2 := session(t, v, "v-1"), session(t, v, "v-2")
	put(t, s1, "a.md", "---\ntype: Fact\ntitle: Verified slowly\nsources: [10-projects/src.md]\n---\nverified slowly\n")
	var work string
	waitFor("v-1's verifier started", func() bool {
		ms, _ := filepath.Glob(filepath.Join(tmp, "fedmem-verify-*", verify.VerifyDraftFile))
		for _, m := range ms {
			if b, _ := os.ReadFile(m); strings.Contains(string(b), "slowly") {
				work = filepath.Dir(m)
				return true
			}
		}
		return false
	})
	put(t, s2, "b.md", "---\ntype: Fact\ntitle: Verified quickly\nsources: [10-projects/src.md]\n---\nverified at once\n")
	receipt := func(sd, name string) func() bool {
		return func() bool { _, err := os.Stat(filepath.Join(sd, ".receipts", name+".json")); return err == nil }
	}
	waitFor("v-2's draft decided while v-1's verifier runs", receipt(s2, "b.md"))
	if receipt(s1, "a.md")() {
		b, _ := os.ReadFile(filepath.Join(s1, ".receipts", "a.md.json"))
		t.Fatalf("v-1's draft was decided before its verifier was released: %s", b)
	}
	if err := os.WriteFile(filepath.Join(work, "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor("v-1's draft decided once its verifier ended", receipt(s1, "a.md"))
	var r Receipt
	b, err := os.ReadFile(filepath.Join(s1, ".receipts", "a.md.json"))
	if err != nil || json.Unmarshal(b, &r) != nil || r.State != StatePromoted || len(findingsWith(r.Reasons, decide.RuleVerifierPassed)) != 1 {
		t.Fatalf("v-1's receipt: %s %v; want promoted with %s", b, err, decide.RuleVerifierPassed)
	}
}
