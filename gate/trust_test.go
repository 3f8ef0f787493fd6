package gate

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
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

func putHostileAndOrdinary(t *testing.T, sd string) {
	t.Helper()
	for _, f := range hostileFixtures {
		b, err := os.ReadFile(filepath.Join("testdata/corpus", f))
		if err != nil {
			t.Fatal(err)
		}
		put(t, sd, f, string(b))
	}
	for i := 0; i < 10; i++ {
		put(t, sd, fmt.Sprintf("ordinary-%d.md", i), ordinaryNote(i))
	}
}

// Acceptance (issue 7): under the default policy nothing promotes; under a
// policy that trusts the session's proven profile, no hostile draft
// promotes and at least 8 of 10 ordinary sourced notes do.
func TestTrustAcceptance(t *testing.T) {
	for _, trusted := range []bool{false, true} {
		t.Run(fmt.Sprintf("trusted=%v", trusted), func(t *testing.T) {
			v := newVault(t)
			putSources(t, v)
			if trusted {
				setPolicy(t, v, trustPolicy())
			}
			sd := session(t, v, "accept")
			putHostileAndOrdinary(t, sd)
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
	// conflict), a reviewer approves: every approval finds a path.
	paths := map[string]bool{}
	for _, d := range s.Decisions {
		if d.State == StatePending {
			ad, err := g.Approve(d.ID, "alice")
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
