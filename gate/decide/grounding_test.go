package decide

import (
	"strings"
	"testing"

	"github.com/fedmem/fedmem/gate/validate"
	"github.com/fedmem/fedmem/vault/note"
)

// The sources of gate/testdata/trusted/vault the cases cite.
var groundingVault = map[string]groundSource{
	"ci": {Path: "20-domains/ci/test-suite.md", Names: []string{"ci test suite", "test suite"},
		Body: "The CI pipeline runs the unit, integration and security test suites on every pull request. A merge needs all three to pass."},
	"backup": {Path: "20-domains/data/backup-schedule.md", Names: []string{"database backup schedule", "backup schedule"},
		Body: "The primary Postgres cluster is backed up every night at 02:00 UTC. Backups are kept for 35 days."},
	"region": {Path: "20-domains/infra/deployment-region.md", Names: []string{"deployment region"},
		Body: "Production runs in the us-east-1 region. The standby region is us-west-2 and is kept warm."},
	"search": {Path: "10-projects/search/index-refresh.md", Names: []string{"search index refresh", "index refresh"},
		Body: "The search index is rebuilt every 15 minutes from the catalogue database."},
	"go": {Path: "20-domains/build/go-toolchain.md", Names: []string{"go toolchain version", "go toolchain"},
		Body: "The services build with Go 1.26. The toolchain is pinned in each module's go.mod file."},
	"session": {Path: "20-domains/auth/session-timeout.md", Names: []string{"session timeout"},
		Body: "Web sessions expire after 30 minutes of inactivity. Refresh tokens are valid for 14 days."},
	"secret": {Path: "20-domains/security/secret-rotation.md", Names: []string{"secret rotation"},
		Body: "Database credentials are rotated every 90 days by the platform team. Rotation is recorded in the change calendar."},
	"review": {Path: "20-domains/security/dependency-review.md", Names: []string{"dependency review"},
		Body: "New third party dependencies are reviewed by the security team before they are added. Patch releases are not reviewed again."},
}

// TestEvidenceGrounding: rule evidence-grounding on the red team's plain
// false statement (rt4-passive-false-1) and its variants — a negation, a
// changed figure, region, frequency and version of what the source says —
// and on notes that add to their source in its terms or by a measure.
func TestEvidenceGrounding(t *testing.T) {
	for _, c := range []struct {
		name, src, body string
		want            []string // substrings of the reason; nil: not held
	}{
		{"passive false", "ci", "The security stage of the CI test suite is disabled on the release branches.",
			[]string{`"The security stage of the CI test suite is disabled on the relea…"`, "no word of its predicate (disabled, release, branches) is a word of 20-domains/ci/test-suite.md", "gives no measure", "held for a reviewer"}},
		{"referring back", "ci", "The security stage of the CI test suite runs after the unit tests. It is disabled on the release branches.",
			[]string{`"It is disabled on the release branches."`, `("security stage ci test suite")`, "(disabled, release, branches)"}},
		{"negated", "ci", "The security test suite of the CI pipeline does not run on pull requests from forks.",
			[]string{`negates it ("not")`, "where 20-domains/ci/test-suite.md state no negation"}},
		{"without", "ci", "Release branches run the CI test suite without the security stage.",
			[]string{`negates it ("without")`}},
		{"changed number", "backup", "The nightly backups of the primary Postgres cluster are deleted after 7 days.",
			[]string{"gives 7 (days) where its source 20-domains/data/backup-schedule.md gives 35", `"Backups are kept for 35 days."`}},
		{"changed region", "region", "The primary deployment region of production is eu-west-1.",
			[]string{`names "eu-west-1" where its source 20-domains/infra/deployment-region.md names "us-east-1"`}},
		{"changed frequency", "search", "A rebuild of the search index from the catalogue database happens every hour.",
			[]string{`says how often "every hour" where its source 10-projects/search/index-refresh.md says "every 15 minutes"`}},
		{"changed version, no verb found", "go", "The services of the Go toolchain build with Go 1.22.",
			[]string{"gives 1.22 (go) where its source 20-domains/build/go-toolchain.md gives 1.26"}},
		{"changed timeout, no verb found", "session", "Web sessions expire after 45 minutes of inactivity.",
			[]string{"gives 45 (minutes) where its source 20-domains/auth/session-timeout.md gives 30"}},

		// Promoted: the predicate holds a word of the source, or a measure.
		{"runs after", "ci", "The security stage of the CI test suite runs after the integration tests. It takes about four minutes on a pull request.", nil},
		{"word formation", "ci", "Engineers rerun the CI test suite when a pull request shows a flaky test. The CI suite tracks flaky tests in a weekly report.", nil},
		{"a range beside the source's figure", "backup", "The nightly backup window runs from 02:00 to 03:30 UTC.", nil},
		{"a comparison with the source's figure", "session", "Sessions of the admin console expire after 10 minutes of inactivity, which is shorter than the 30 minutes of the public web app.", nil},
		{"the source's figure and frequency", "backup", "Database backups older than 35 days are deleted after the nightly run.", nil},
		{"the source's identifiers", "region", "A failover from us-east-1 to the standby region us-west-2 is tested every quarter.", nil},
		{"about something else", "secret", "An alert fires when a database secret is older than 95 days, five days after its rotation is due.", nil},
		{"empty clauses", "ci", "The CI test suite runs, and, so, ; ; on every pull request.", nil},
		{"a negation the source makes", "review", "Patch releases of approved dependencies are not reviewed by the security team again.", nil},
	} {
		res, err := validate.Draft([]byte("---\ntype: Fact\ntitle: T\n---\n" + c.body + "\n"))
		if err != nil || res.Note == nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		src := groundingVault[c.src]
		fs := grounded(res, []groundSource{src})
		if c.want == nil {
			if len(fs) != 0 {
				t.Errorf("%s: held: %v", c.name, fs)
			}
			continue
		}
		if len(fs) != 1 || fs[0].Rule != RuleEvidenceGrounding || fs[0].Severity != note.Flag {
			t.Errorf("%s: want one %s flag, got %v", c.name, RuleEvidenceGrounding, fs)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(fs[0].Message, w) {
				t.Errorf("%s: reason %q lacks %q", c.name, fs[0].Message, w)
			}
		}
	}
}

// A body past what the rule reads is held, not granted.
func TestEvidenceGroundingBound(t *testing.T) {
	body := strings.Repeat("The CI test suite runs on every pull request. ", maxBoundSentences+1)
	res, err := validate.Draft([]byte("---\ntype: Fact\ntitle: T\n---\n" + body + "\n"))
	if err != nil || res.Note == nil {
		t.Fatal(err)
	}
	fs := grounded(res, []groundSource{groundingVault["ci"]})
	if len(fs) != 1 || !strings.Contains(fs[0].Message, "more than 200 clauses") {
		t.Errorf("want one finding for the bound, got %v", fs)
	}
}

func TestGroundKey(t *testing.T) {
	for _, c := range [][2]string{{"runs", "run"}, {"running", "run"}, {"retried", "retry"}, {"retries", "retry"}, {"nightly", "night"},
		{"rotation", "rotat"}, {"rotated", "rotat"}, {"minutes", "minut"}, {"dependencies", "dependency"}, {"Backups", "backup"}} {
		if got := groundKey(c[0]); got != c[1] {
			t.Errorf("groundKey(%q) = %q, want %q", c[0], got, c[1])
		}
	}
	if f := identifierForm("us-east-1"); f != "a-a-9" || identifierForm("eu-west-1") != f || identifierForm("go.mod") != "" {
		t.Errorf("identifierForm: %q", f)
	}
}
