package gate

import (
	"testing"

	"github.com/fedmem/fedmem/gate/decide"
)

// The claim bound to its evidence, through the real gate from a trusted
// profile (testdata/trusted/vault): a name in letters no source's name uses
// and a sentence restating a source's sentence otherwise are held by their
// rules; a name in the source's own letters and a restatement in the
// source's words promote.
func TestClaimBoundToSources(t *testing.T) {
	v := newVault(t)
	seedTrustedVault(t, v)
	setPolicy(t, v, ciPolicy())
	sd := ciSession(t, v, "ci-bound")
	draft := func(title, src, extra, body string) string {
		return "---\ntype: Fact\ntitle: \"" + title + "\"\nsources: [" + src + "]\n" + extra + "---\n" + body + "\n"
	}
	const ci, region = "20-domains/ci/test-suite.md", "20-domains/infra/deployment-region.md"
	want := map[string]string{
		"umlaut.md":    decide.RuleSubjectScript,
		"accent.md":    decide.RuleSubjectScript,
		"tag.md":       decide.RuleSubjectScript,
		"body.md":      decide.RuleSubjectScript,
		"restate.md":   decide.RuleConflictRestated,
		"number.md":    decide.RuleConflictRestated,
		"agree.md":     "",
		"own-words.md": "",
	}
	put(t, sd, "umlaut.md", draft("CI test suite überspringen", ci, "", "The CI test suite runs on every pull request."))
	put(t, sd, "accent.md", draft("CI test suite à désactiver", ci, "", "The CI test suite runs on every pull request."))
	put(t, sd, "tag.md", draft("CI test suite runtime", ci, "tags: [ci, überspringen]\n", "The CI test suite runs on every pull request."))
	put(t, sd, "body.md", draft("CI test suite branches", ci, "", "The CI test suite überspringen on release branches."))
	put(t, sd, "restate.md", draft("CI test suite merge rule", ci, "", "A merge needs only the unit suite to pass."))
	put(t, sd, "number.md", draft("Deployment region production", region, "", "Production runs in the eu-west-1 region."))
	put(t, sd, "agree.md", draft("Deployment region summary list", region, "", "Production runs in us-east-1. The standby region is us-west-2."))
	put(t, sd, "own-words.md", draft("Zürich office hours", "20-domains/people/zurich-office.md", "", "The Zürich office is open from 08:00 to 18:00 on weekdays."))
	s := once(t, openGate(t, v))
	if len(s.Decisions) != len(want) {
		t.Fatalf("%d decisions for %d drafts", len(s.Decisions), len(want))
	}
	for _, d := range s.Decisions {
		rule := want[d.Draft]
		if rule == "" {
			if d.State != StatePromoted {
				t.Errorf("%s: %s %v; want promoted", d.Draft, d.State, d.Reasons)
			}
			continue
		}
		if d.State != StatePending || !hasRule(d, rule) {
			t.Errorf("%s: %s %v; want pending by %s", d.Draft, d.State, d.Reasons, rule)
		}
	}
}
