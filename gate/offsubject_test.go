package gate

import (
	"slices"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/gate/decide"
)

// TestRT2SubjectOtherNote: from a trusted profile, a draft citing the CI
// note whose second sentence is about the deployment region (a human note
// in force it does not cite) was promoted (rt2-offbody-contradict-1); it is
// held by subject-other-note naming that note — also when the region note
// is cited but does not count (a title about the CI suite is not about
// the region: citing it is no way around the rule). A sentence referring
// back ("It…") and one about the cited subject are not held.
func TestRT2SubjectOtherNote(t *testing.T) {
	v := newVault(t)
	seedTrustedVault(t, v)
	setPolicy(t, v, ciPolicy())
	sd := ciSession(t, v, "ci-offsubject")
	head := func(title string, srcs ...string) string {
		return "---\ntype: Fact\ntitle: " + title + "\nsources: [" + strings.Join(srcs, ", ") + "]\n---\n"
	}
	drafts := map[string]string{
		"off.md":    head("CI test suite region", "20-domains/ci/test-suite.md") + "The CI test suite runs on every pull request. Production runs in the eu-west-1 region.\n",
		"cited.md":  head("CI test suite and region", "20-domains/ci/test-suite.md", "20-domains/infra/deployment-region.md") + "The CI test suite runs on every pull request. Production runs in the eu-west-1 region.\n",
		"plain.md":  head("CI test suite duration", "20-domains/ci/test-suite.md") + "The CI test suite takes about 14 minutes. It runs on the shared build hosts.\n",
		"secret.md": head("CI test suite credentials", "20-domains/ci/test-suite.md") + "The CI test suite runs on every pull request. Database credentials are kept in the shared team drive.\n",
	}
	drafts["numbered.md"] = head("Deployment region 2026", "20-domains/infra/deployment-region.md") + "The production region is eu-west-1 and the standby region is us-west-2.\n"
	drafts["narrowed.md"] = head("Region deployment plan", "20-domains/infra/deployment-region.md") + "The active production region is eu-west-1 from this month.\n"
	drafts["agrees.md"] = head("Deployment region production", "20-domains/infra/deployment-region.md") + "The production region is us-east-1.\n"
	for n, c := range drafts {
		put(t, sd, n, c)
	}
	s := once(t, openGate(t, v))
	ds := map[string]Decision{}
	for _, d := range s.Decisions {
		ds[d.Draft] = d
	}
	for _, n := range []string{"off.md", "secret.md", "cited.md"} {
		rtHeldBy(t, n, ds[n], decide.RuleSubjectOtherNote)
	}
	// A title with its numbers left out is a name in force: a version of
	// that note, a second answer beside it (rt2-title-digit-conflict-1).
	rtHeldBy(t, "numbered.md", ds["numbered.md"], decide.RuleConflict)
	// A head narrowed by modifiers before its noun ("active production
	// region is" against "standby region is") is compared too
	// (rt2-title-sorted-conflict-1); words all in the source's text agree.
	rtHeldBy(t, "narrowed.md", ds["narrowed.md"], decide.RuleConflictRestated)
	if slices.Contains(rtRules(ds["agrees.md"]), decide.RuleConflictRestated) {
		t.Errorf("agrees.md: a restatement in the source's words is held: %v", ds["agrees.md"].Reasons)
	}
	if r := reasonText(ds["off.md"], decide.RuleSubjectOtherNote); !strings.Contains(r, "20-domains/infra/deployment-region.md") {
		t.Errorf("off.md: the reason should name the note the sentence is about: %q", r)
	}
	for _, n := range []string{"plain.md"} {
		if slices.Contains(rtRules(ds[n]), decide.RuleSubjectOtherNote) {
			t.Errorf("%s: held by %s: %v", n, decide.RuleSubjectOtherNote, ds[n].Reasons)
		}
	}
	if ds["plain.md"].State != StatePromoted {
		t.Errorf("plain.md: a sentence about the cited subject and one referring back should promote: %s %v", ds["plain.md"].State, rtRules(ds["plain.md"]))
	}
}
