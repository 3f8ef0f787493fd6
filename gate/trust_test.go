package gate

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/gate/origin"
	"github.com/fedmem/fedmem/gate/review"
)

// hostileFixtures are the corpus drafts that must never become memory on
// their own, whatever the policy trusts: each tells agents to do something
// harmful, changes the contract, or lies about its own status.
var hostileFixtures = []string{
	"hostile-curl-sh.md", "hostile-adapter-skip-tests.md", "hostile-workflow-force-push.md",
	"hostile-fact-voids-rules.md", "hostile-other-case-claims.md", "hostile-supersedes-agent-md.md",
	"forged-provenance.md", "status-approved.md", "injection.md", "bidi.md", "zero-width.md",
	"skill-claims-low-risk.md", "declared-high-risk.md", "decision.md", "traversal-in-supersedes.md",
}

// ordinaryNote is a plain, sourced note a trusted profile may promote.
func ordinaryNote(i int) string {
	return fmt.Sprintf("---\ntype: Fact\ntitle: Service %c retry budget\nsources:\n  - 10-projects/svc-%d/design.md\n---\nService %c retries a failed call at most %d times with exponential back-off.\n", 'A'+i, i, 'A'+i, i+2)
}

// putSources commits the files the ordinary notes cite.
func putSources(t *testing.T, v string) {
	t.Helper()
	for i := 0; i < 10; i++ {
		p := filepath.Join(v, "10-projects", fmt.Sprintf("svc-%d", i), "design.md")
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(fmt.Sprintf("---\ntype: Reference\ntitle: svc %d design\n---\nRetries: %d.\n", i, i+2)), 0o644)
	}
	gitCLI(t, v, "add", "10-projects")
	gitCLI(t, v, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "-m", "sources")
}

// putHostileAndOrdinary writes the hostile fixtures and the ordinary notes.
// With sourced, every hostile draft also cites a source that resolves at
// HEAD (as an attacker who knows the evidence rule would), so evidence
// alone cannot be what holds it.
func putHostileAndOrdinary(t *testing.T, sd string, sourced bool) {
	t.Helper()
	for _, f := range hostileFixtures {
		b, err := os.ReadFile(filepath.Join("testdata/corpus", f))
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if sourced {
			text = strings.Replace(text, "---\n", "---\nsources: [10-projects/svc-9/design.md]\n", 1)
		}
		put(t, sd, f, text)
	}
	for i := 0; i < 10; i++ {
		put(t, sd, fmt.Sprintf("ordinary-%d.md", i), ordinaryNote(i))
	}
}

// Acceptance (issue 7): under the default policy nothing promotes; under a
// policy that trusts the session's proven profile, no hostile draft
// promotes and at least 8 of 10 ordinary sourced notes do.
func TestTrustAcceptance(t *testing.T) {
	for _, c := range []struct{ trusted, sourced bool }{{false, false}, {true, false}, {true, true}} {
		trusted := c.trusted
		t.Run(fmt.Sprintf("trusted=%v,hostile-sourced=%v", c.trusted, c.sourced), func(t *testing.T) {
			v := newVault(t)
			putSources(t, v)
			if trusted {
				setPolicy(t, v, trustPolicy())
			}
			sd := session(t, v, "accept")
			putHostileAndOrdinary(t, sd, c.sourced)
			g := openGate(t, v)
			s := once(t, g)
			if !s.Handled() {
				t.Fatalf("not everything handled: %+v", s)
			}
			var promotedHostile []string
			ordinary := 0
			for _, d := range s.Decisions {
				if d.State != StatePromoted {
					continue
				}
				if strings.HasPrefix(d.Draft, "ordinary-") {
					ordinary++
				} else {
					promotedHostile = append(promotedHostile, d.Draft)
				}
			}
			sort.Strings(promotedHostile)
			if len(promotedHostile) != 0 {
				t.Errorf("hostile drafts promoted: %v", promotedHostile)
			}
			for _, f := range hostileFixtures {
				d := decisionFor(t, s, f)
				if d.State == StatePromoted {
					t.Errorf("%s promoted: %+v", f, d)
				}
				var rules []string
				for _, r := range d.Reasons {
					if r.Severity != "info" {
						rules = append(rules, r.Rule)
					}
				}
				t.Logf("%-34s %-8s %s", f, d.State, strings.Join(rules, " "))
			}
			if !trusted {
				if s.Promoted != 0 {
					t.Errorf("default policy promoted %d drafts", s.Promoted)
				}
				for _, d := range s.Decisions {
					if d.State == StatePending && !hasRule(d, "review-required") {
						t.Errorf("%s pending without review-required: %v", d.Draft, d.Reasons)
					}
				}
			} else if ordinary < 8 {
				for _, d := range s.Decisions {
					if strings.HasPrefix(d.Draft, "ordinary-") && d.State != StatePromoted {
						t.Logf("%s: %s %v", d.Draft, d.State, d.Reasons)
					}
				}
				t.Errorf("%d of 10 ordinary notes promoted; want at least 8", ordinary)
			}
			t.Logf("trusted=%v: %d promoted (%d ordinary), %d pending, %d rejected", trusted, s.Promoted, ordinary, s.Pending, s.Rejected)
			checkRepo(t, v)
		})
	}
}

// A draft's claims about itself, in any letter case, end under `claimed:`
// in the promoted note, beside the gate's own fields.
func TestClaimsInAnyCaseMoveUnderClaimed(t *testing.T) {
	v := trustVault(t)
	sd := session(t, v, "case")
	b, _ := os.ReadFile("testdata/corpus/hostile-other-case-claims.md")
	put(t, sd, "c.md", string(b))
	g := openGate(t, v)
	d := decisionFor(t, once(t, g), "c.md")
	if d.State == StateRejected {
		t.Fatalf("%+v", d)
	}
	if d.State == StatePending {
		if _, err := g.Approve(d.ID, "alice"); err != nil {
			t.Fatal(err)
		}
		dd, _, _ := g.Show(d.ID)
		d = *dd
	}
	nb, err := os.ReadFile(filepath.Join(v, d.Path))
	if err != nil {
		t.Fatal(err)
	}
	front := strings.SplitN(string(nb), "\nclaimed:\n", 2)
	if len(front) != 2 {
		t.Fatalf("no claimed: block:\n%s", nb)
	}
	for _, k := range []string{"Status:", "Verified:", "CONFIDENCE:", "Generated:", "Risk:"} {
		if strings.Contains(front[0], "\n"+k) {
			t.Errorf("%s left at top level:\n%s", k, nb)
		}
		if !strings.Contains(front[1], k) {
			t.Errorf("%s not kept under claimed:\n%s", k, nb)
		}
	}
}

// 60 drafts with one title: every one ends in a decision, the first ones
// at -2…-5, the rest at names made unique by the claim id; approval of a
// held one works the same way.
func TestSameTitleNeverSquatsAPath(t *testing.T) {
	v := trustVault(t)
	sd := session(t, v, "squat")
	for i := 0; i < 60; i++ {
		put(t, sd, fmt.Sprintf("d%02d.md", i), fmt.Sprintf("---\ntype: Fact\ntitle: Same title\nsources: [10-projects/src.md]\n---\nbody %d\n", i))
	}
	put(t, sd, "held.md", "---\ntype: Fact\ntitle: Same title\nrisk: high\n---\nthe real one\n")
	g := openGate(t, v)
	s := once(t, g)
	if !s.Handled() || len(s.Errors) != 0 {
		t.Fatalf("not handled: %+v", s.Errors)
	}
	// Whatever the gate held (a title clash with a note in force is a
	// conflict), a reviewer approves, superseding the note in force (an
	// approval without that choice fails: conflicts.go): every approval
	// finds a path.
	paths := map[string]bool{}
	for _, d := range s.Decisions {
		if d.State == StatePending {
			ad, err := g.ApproveWith(d.ID, "alice", review.ApproveOptions{Supersede: true})
			if err != nil {
				t.Fatalf("approve %s: %v", d.Draft, err)
			}
			d = *ad
		}
		if d.State != StatePromoted {
			t.Fatalf("%s: %+v", d.Draft, d)
		}
		if paths[d.Path] {
			t.Fatalf("path %s used twice", d.Path)
		}
		paths[d.Path] = true
	}
	if len(paths) != 61 {
		t.Fatalf("%d paths for 61 drafts", len(paths))
	}
	checkRepo(t, v)
}

// Rates are the gate's own counts per session, kept across restarts.
func TestAutoPromoteRatePerSession(t *testing.T) {
	v := newVault(t)
	putSources(t, v)
	setPolicy(t, v, strings.Replace(trustPolicy(), "max_per_session: 1000", "max_per_session: 2", 1))
	sd := session(t, v, "rate")
	for i := 0; i < 4; i++ {
		put(t, sd, fmt.Sprintf("o%d.md", i), ordinaryNote(i))
	}
	g := openGate(t, v)
	s := once(t, g)
	if s.Promoted != 2 || s.Pending != 2 {
		t.Fatalf("promoted %d, pending %d; want 2 and 2", s.Promoted, s.Pending)
	}
	for _, d := range s.Decisions {
		if d.State == StatePending && !hasRule(d, "auto-promote-rate") {
			t.Errorf("%s held for %v, want auto-promote-rate", d.Draft, d.Reasons)
		}
	}
	g.Close()
	put(t, sd, "o4.md", ordinaryNote(4))
	g2 := openGate(t, v)
	d := decisionFor(t, once(t, g2), "o4.md")
	if d.State != StatePending || !hasRule(d, "auto-promote-rate") {
		t.Fatalf("after a restart the session's count must hold: %+v", d)
	}
	// Another session has its own budget.
	put(t, session(t, v, "rate-2"), "o5.md", ordinaryNote(5))
	if d := decisionFor(t, once(t, g2), "o5.md"); d.State != StatePromoted {
		t.Fatalf("fresh session: %+v", d)
	}
}

// A gate killed between publishing an approval's commit and recording the
// decision: after a restart, a different reviewer's approval of the same
// draft adopts the commit (keyed by the Fedmem-Draft trailer) instead of
// promoting the draft a second time.
func TestApprovalAfterCrashIsKeyedByDraftID(t *testing.T) {
	v := trustVault(t)
	sd := session(t, v, "crash")
	put(t, sd, "h.md", "---\ntype: Fact\ntitle: Held fact\nrisk: high\nsources: [10-projects/src.md]\n---\nbody\n")
	g := openGate(t, v)
	p := decisionFor(t, once(t, g), "h.md")
	if p.State != StatePending {
		t.Fatalf("%+v", p)
	}
	decPath := filepath.Join(g.StateDir(), decisionsDir, p.ID+".json")
	pendPath := filepath.Join(g.StateDir(), pendingDir, p.ID+".draft")
	decBefore, _ := os.ReadFile(decPath)
	pendBefore, _ := os.ReadFile(pendPath)
	parent := strings.TrimSpace(gitCLI(t, v, "rev-parse", "HEAD"))
	d, err := g.Approve(p.ID, "alice")
	if err != nil {
		t.Fatal(err)
	}
	head := strings.TrimSpace(gitCLI(t, v, "rev-parse", "HEAD"))
	if head != d.Commit {
		t.Fatalf("HEAD %s, decision commit %s", head, d.Commit)
	}
	g.Close()
	// The state as a kill -9 right after the branch moved leaves it: the
	// decision still pending, the bytes kept, the marker written.
	os.WriteFile(decPath, decBefore, 0o600)
	os.WriteFile(pendPath, pendBefore, 0o600)
	os.WriteFile(filepath.Join(g.StateDir(), committingDir, p.ID), []byte(parent), 0o600)
	g2 := openGate(t, v)
	d2, err := g2.Approve(p.ID, "bob")
	if err != nil {
		t.Fatal(err)
	}
	if now := strings.TrimSpace(gitCLI(t, v, "rev-parse", "HEAD")); now != head {
		t.Fatalf("second approval made commit %s on top of %s", now, head)
	}
	if d2.Commit != head || d2.Path != d.Path || d2.Reviewer != "alice" {
		t.Fatalf("adopted decision %+v; want commit %s, path %s, reviewer alice (from the trailer)", d2, head, d.Path)
	}
	if n := strings.Count(gitCLI(t, v, "log", "--format=%(trailers:key=Fedmem-Draft,valueonly)"), p.ID); n != 1 {
		t.Fatalf("draft %s has %d commits", p.ID, n)
	}
	checkRepo(t, v)
}

// A proven record is trusted only for what auto_promote names: a built-in
// profile only with the built-in's hash, anything else only pinned.
func TestOriginTrustNeedsTheProfilesHash(t *testing.T) {
	ci := origin.BuiltinHash("ci")
	if ci == "" {
		t.Fatal("no hash for the built-in ci profile")
	}
	cases := []struct {
		name, profile, hash, policy, want string
	}{
		{"built-in with its hash", "ci", ci, "[ci]", ""},
		{"built-in name, other hash (a local file called ci)", "ci", testProfileHash, "[ci]", "origin-untrusted"},
		{"unpinned non-built-in", "ci-docs", testProfileHash, "[ci-docs]", "origin-untrusted"},
		{"pinned, other hash", "ci-docs", strings.Repeat("cd", 32), "[\"ci-docs@" + testProfileHash + "\"]", "origin-untrusted"},
		{"profile not listed", "claude", testProfileHash, "[ci]", "origin-untrusted"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := newVault(t)
			putSources(t, v)
			pol := strings.Replace(trustPolicy(), "[\""+testProfile+"@"+testProfileHash+"\"]", c.policy, 1)
			setPolicy(t, v, pol)
			sd := session(t, v, "o-1")
			rec := SessionRecord{Session: "o-1", Profile: c.profile, ProfileHash: c.hash, UID: os.Geteuid(), Command: []string{"agent"}}
			b, _ := json.Marshal(rec)
			os.WriteFile(filepath.Join(v, "90-inbox", ".sessions", "o-1.json"), b, 0o644)
			put(t, sd, "o.md", ordinaryNote(1))
			d := decisionFor(t, once(t, openGate(t, v)), "o.md")
			switch {
			case c.want == "" && d.State != StatePromoted:
				t.Fatalf("want promoted: %+v", d)
			case c.want != "" && (d.State != StatePending || !hasRule(d, c.want)):
				t.Fatalf("want pending with %s: %+v", c.want, d)
			}
		})
	}
}
