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
		{"auto no profiles", "auto_promote:\n  types: [Fact]\n", "p.yaml:2: auto_promote needs `profiles`"},
		{"auto empty profiles", "auto_promote:\n  profiles: []\n", "p.yaml:2: auto_promote.profiles must name at least one profile"},
		{"auto bad pin", "auto_promote:\n  profiles: [ci-docs@abc]\n", "p.yaml:2: auto_promote.profiles: \"ci-docs@abc\": after @ comes the profile's sha256"},
		{"auto bad name", "auto_promote:\n  profiles: [\"../x\"]\n", "p.yaml:2: auto_promote.profiles: \"../x\" is not a profile name"},
		{"auto rate", "auto_promote:\n  profiles: [ci]\n  max_per_day: -1\n", "p.yaml:3: auto_promote.max_per_day must be a whole number"},
		{"auto root group", "auto_promote:\n  profiles: [ci]\n  launcher_group: root\n", "p.yaml:3: auto_promote.launcher_group must be a dedicated group"},
		{"auto unknown", "auto_promote:\n  profiles: [ci]\n  trust_everyone: true\n", "p.yaml:3: unknown key \"auto_promote.trust_everyone\""},
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

// Without auto_promote (the init template), nothing promotes on its own; the
// block parses with its defaults; Adapter, Workflow and Runbook never fall
// below medium whatever risk.types says.
func TestAutoPromoteAndRiskFloor(t *testing.T) {
	if Default().AutoPromote != nil {
		t.Fatal("the default policy must not auto-promote")
	}
	p, err := Parse("p.yaml", []byte("risk:\n  types: {Adapter: low, Workflow: low}\nauto_promote:\n  profiles: [ci, \"ci-docs@"+strings.Repeat("ab", 32)+"\"]\n  types: [Fact, Reference]\n  launcher_group: fedmem-launch\n"))
	if err != nil {
		t.Fatal(err)
	}
	a := p.AutoPromote
	if a == nil || len(a.Profiles) != 2 || a.MaxPerSession != DefaultMaxPerSession || a.MaxPerDay != DefaultMaxPerDay || a.LauncherGroup != "fedmem-launch" || a.Line != 4 {
		t.Fatalf("auto_promote %+v", a)
	}
	if !a.TypeAllowed("fact") || a.TypeAllowed("Adapter") {
		t.Errorf("types %v", a.Types)
	}
	if n, h := ProfilePin(a.Profiles[1]); n != "ci-docs" || len(h) != 64 {
		t.Errorf("pin %q %q", n, h)
	}
	for _, typ := range []string{"Adapter", "workflow", "Runbook"} {
		if r := p.RiskFor(typ, "20-domains"); r != "medium" {
			t.Errorf("RiskFor(%s) = %s; want at least medium", typ, r)
		}
	}
}

func TestWarnings(t *testing.T) {
	p, err := Parse("p.yaml", []byte("auto_promote:\n  profiles: [ci, ci-docs]\n"))
	if err != nil {
		t.Fatal(err)
	}
	w := strings.Join(p.Warnings([]string{"ci"}), "\n")
	if !strings.Contains(w, "no launcher_group") || !strings.Contains(w, `"ci-docs" is not a built-in`) || strings.Contains(w, `"ci" is not`) {
		t.Fatalf("warnings:\n%s", w)
	}
	if len(Default().Warnings(nil)) != 0 {
		t.Fatal("default policy warns")
	}
}

// TestPolicyUnclosedBracketLine: the error names the line of the open '['.
func TestPolicyUnclosedBracketLine(t *testing.T) {
	_, err := Parse("p.yaml", []byte("version: 1\nreviewers: [alice\nauto_promote:\n  profiles: [ci]\n"))
	if err == nil || !strings.Contains(err.Error(), "p.yaml:2: ") || !strings.Contains(err.Error(), "'[' opened on this line is not closed") {
		t.Fatalf("err = %v; want p.yaml:2 and the open '['", err)
	}
}
