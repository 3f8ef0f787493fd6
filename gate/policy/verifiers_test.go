package policy

import (
	"strings"
	"testing"
	"time"
)

func TestVerifiersParse(t *testing.T) {
	p, err := Parse("p.yaml", []byte(`verifiers:
  contract-test:
    types: [Fact, runbook]
    command: [/usr/bin/check, --strict]
    timeout: 45s
  docs:
    types: [Reference]
    command: [/bin/true]
    profile: ci
`))
	if err != nil {
		t.Fatal(err)
	}
	ct := p.Verifiers["contract-test"]
	if ct.Profile != DefaultVerifierProfile || ct.Timeout != 45*time.Second || len(ct.Command) != 2 || ct.Line != 3 {
		t.Fatalf("contract-test = %+v", ct)
	}
	if d := p.Verifiers["docs"]; d.Profile != "ci" || d.Timeout != DefaultVerifierTimeout {
		t.Fatalf("docs = %+v", d)
	}
	if vs := p.VerifiersFor("Runbook"); len(vs) != 1 || vs[0].Name != "contract-test" {
		t.Fatalf("VerifiersFor(Runbook) = %+v", vs)
	}
	if vs := p.VerifiersFor("Decision"); len(vs) != 0 {
		t.Fatalf("VerifiersFor(Decision) = %+v", vs)
	}
}

func TestVerifiersErrors(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"verifiers:\n  Bad Name:\n    types: [Fact]\n    command: [x]\n", "p.yaml:3: verifiers.Bad Name: a verifier name"},
		{"verifiers:\n  v:\n    command: [x]\n", "p.yaml:3: verifiers.v needs `types`"},
		{"verifiers:\n  v:\n    types: [Fact]\n", "p.yaml:3: verifiers.v needs `command`"},
		{"verifiers:\n  v:\n    types: [Fact]\n    command: [x]\n    timeout: 2h\n", "p.yaml:5: verifiers.v.timeout must be a duration from 1s to 1h"},
		{"verifiers:\n  v:\n    types: [Fact]\n    command: [x]\n    shell: true\n", `p.yaml:5: unknown key "verifiers.v.shell"`},
		{"verifiers:\n  v:\n    types: [Fact]\n    command: /bin/x\n", "p.yaml:4: verifiers.v.command must be a list"},
	} {
		_, err := Parse("p.yaml", []byte(c.text))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.text, err, c.want)
		}
	}
}
