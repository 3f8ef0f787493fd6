package gate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/sweep"
	"github.com/fedmem/fedmem/gate/verify"
	"github.com/fedmem/fedmem/test/testutil"
)

const flowVerifier = `verifiers:
  region-check:
    types: [Fact]
    command: [/bin/sh, -c, 'grep -q eu-west-1 "$1" && echo region ok || { echo "no eu-west-1 in the draft"; exit 1; }', region-check]
    timeout: 60s
`

// TestEvidenceDecidesPromotion runs the whole path on a real vault from a
// trusted origin: a draft with a resolving source and a passing verifier
// promotes with its source fingerprinted and `verified: process:<name>`;
// one without a vault source, one whose source does not resolve, one whose
// verifier fails and one that repeats a note in force are held, each with
// its reason. Then the source changes: sweep withholds the promoted note;
// the source comes back: reverify (by decision id) restores it.
func TestEvidenceDecidesPromotion(t *testing.T) {
	testutil.RequireRoot(t)
	bins := testutil.Binaries(t)
	t.Setenv(verify.FedmemRunEnv, bins.FedmemRun)
	v := sandboxVault(t)
	humanCommit(t, v, map[string]string{"10-projects/src.md": "---\ntype: Reference\ntitle: Source\n---\nWe deploy to eu-west-1.\n"})
	setPolicy(t, v, trustPolicy()+flowVerifier)
	g := openGate(t, v)

	dir := session(t, v, "ev-1")
	put(t, dir, "good.md", "---\ntype: Fact\ntitle: Deploy region\nsources:\n  - resource: 10-projects/src.md\n    section: regions\n  - https://example.com/regions\n---\nProduction runs in eu-west-1.\n")
	s := once(t, g)
	good := decisionFor(t, s, "good.md")
	if good.State != StatePromoted || !hasRule(good, decide.RuleVerifierPassed) {
		t.Fatalf("good.md: %+v", good)
	}
	b, err := os.ReadFile(filepath.Join(v, good.Path))
	if err != nil {
		t.Fatal(err)
	}
	note := string(b)
	for _, want := range []string{"fingerprint: git-blob:" + blobID(t, v, "10-projects/src.md"), "by: process:region-check", "section: regions", "resource: https://example.com/regions"} {
		if !strings.Contains(note, want) {
			t.Errorf("promoted note lacks %q:\n%s", want, note)
		}
	}

	put(t, dir, "nosrc.md", "---\ntype: Fact\ntitle: Workers in eu-west-1\n---\neu-west-1.\n")
	put(t, dir, "badsrc.md", "---\ntype: Fact\ntitle: Cache in eu-west-1\nsources: [10-projects/missing.md]\n---\neu-west-1.\n")
	put(t, dir, "wrong.md", "---\ntype: Fact\ntitle: Queue region\nsources: [10-projects/src.md]\n---\nThe queue runs in us-east-1.\n")
	put(t, dir, "dup.md", "---\ntype: Fact\ntitle: '  DEPLOY   region'\nsources: [10-projects/src.md]\n---\nProduction runs in eu-west-1 (again).\n")
	s = once(t, g)
	for name, rule := range map[string]string{"nosrc.md": decide.RuleNoEvidence, "badsrc.md": decide.RuleSourcesUnresolved, "wrong.md": decide.RuleVerifierFailed, "dup.md": decide.RuleConflict} {
		d := decisionFor(t, s, name)
		if d.State != StatePending || !hasRule(d, rule) {
			t.Errorf("%s: want pending with %s, got %s %v", name, rule, d.State, d.Reasons)
		}
	}
	if d := decisionFor(t, s, "wrong.md"); !strings.Contains(reasonText(d, decide.RuleVerifierFailed), "no eu-west-1 in the draft") {
		t.Errorf("the failure's output should be in the receipt: %v", d.Reasons)
	}
	checkRepo(t, v)

	// The source changes: the promoted note is withheld.
	humanCommit(t, v, map[string]string{"10-projects/src.md": "---\ntype: Reference\ntitle: Source\n---\nWe deploy to us-east-1.\n"})
	sw, err := g.Sweep()
	if err != nil {
		t.Fatal(err)
	}
	if len(sw.Withheld) != 1 || sw.Withheld[0].Path != good.Path || sw.Withheld[0].Reason != sweep.WithholdSourceChanged {
		t.Fatalf("sweep: %+v", sw)
	}
	checkRepo(t, v)
	// Reverify by decision id: refused while the source differs…
	r, err := g.Reverify(good.ID, "alice")
	if err != nil || r.Restored || len(r.Failures) == 0 {
		t.Fatalf("reverify with the source changed: %+v %v", r, err)
	}
	// …restored (the verifier runs again and passes) once it is back.
	humanCommit(t, v, map[string]string{"10-projects/src.md": "---\ntype: Reference\ntitle: Source\n---\nWe deploy to eu-west-1.\n"})
	r, err = g.Reverify(good.ID, "alice")
	if err != nil || !r.Restored || len(r.Verified) != 1 || !r.Verified[0].Passed {
		t.Fatalf("reverify after the source came back: %+v %v", r, err)
	}
	checkRepo(t, v)
}

func reasonText(d Decision, rule string) string {
	for _, r := range d.Reasons {
		if r.Rule == rule {
			return r.Message
		}
	}
	return ""
}
