package policy

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"text/template"
)

// The file `fedmem init` writes must parse and mean what Default says.
func TestInitTemplateParses(t *testing.T) {
	raw, err := os.ReadFile("../../vault/repo/templates/policy.yaml")
	if err != nil {
		t.Skipf("init template not present: %v", err)
	}
	tmpl := template.Must(template.New("p").Parse(string(raw)))
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, map[string]any{"Reviewers": []string{"alice", "1001"}}); err != nil {
		t.Fatal(err)
	}
	p, err := Parse("policy.yaml", buf.Bytes())
	if err != nil {
		t.Fatalf("template policy: %v", err)
	}
	d := Default()
	if p.MaxDraftBytes != d.MaxDraftBytes || p.TTLDefault != d.TTLDefault || len(p.Targets) != len(d.Targets) {
		t.Errorf("template and Default differ: %+v vs %+v", p, d)
	}
	if !p.IsReviewer(1001, "") || !p.IsReviewer(5, "alice") || p.IsReviewer(5, "bob") {
		t.Errorf("reviewers %v", p.Reviewers)
	}
}

func TestParseErrorsNameLine(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"unknown key", "version: 1\nbogus: 2\n", "p.yaml:2: unknown key \"bogus\""},
		{"unknown nested", "limits:\n  max_draft_bytes: 10\n  nope: 1\n", "p.yaml:3: unknown key \"limits.nope\""},
		{"bad risk", "risk:\n  types:\n    Fact: extreme\n", "p.yaml:3: risk.types.Fact must be low, medium or high"},
		{"inbox target", "targets:\n  Fact: 90-inbox\n", "p.yaml:2: targets.Fact: \"90-inbox\" cannot be a promotion target"},
		{"not a folder", "targets:\n  Fact: ../etc\n", "p.yaml:2: targets.Fact: \"../etc\" is not a vault folder"},
		{"ttl range", "ttl_days:\n  default: 0\n", "p.yaml:2: ttl_days.default must be a whole number from 1 to 3650"},
		{"dup", "version: 1\nversion: 1\n", "p.yaml:2: key \"version\" appears twice"},
		{"alias", "reviewers: &r [a]\nx: *r\n", "p.yaml:1: anchors and aliases"},
		{"size", "limits:\n  max_draft_bytes: 999999999\n", "p.yaml:2: limits.max_draft_bytes must be"},
		{"syntax", "a: [\n", "p.yaml:1: yaml:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(c.in))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v; want it to contain %q", err, c.want)
			}
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not a *policy.Error", err)
			}
		})
	}
}

func TestRiskAndTargets(t *testing.T) {
	p := Default()
	if f, ok := p.Target("decision"); !ok || f != "70-decisions" {
		t.Errorf("Target(decision) = %q %v", f, ok)
	}
	if _, ok := p.Target("Poem"); ok {
		t.Errorf("unlisted type must report ok=false")
	}
	if r := p.RiskFor("Fact", "50-skills/published"); r != "high" {
		t.Errorf("folder risk: %s", r)
	}
	if r := p.RiskFor("Skill", "20-domains"); r != "medium" {
		t.Errorf("type risk: %s", r)
	}
	if MaxRisk("low", "bogus") != "high" {
		t.Errorf("unknown risk must count as high")
	}
	if p.TTLDays("runbook") != 30 || p.TTLDays("Fact") != 90 {
		t.Errorf("ttl")
	}
}
