package gate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/gate/verify"
	"github.com/fedmem/fedmem/test/testutil"
	vaultrepo "github.com/fedmem/fedmem/vault/repo"
)

// sandboxVault makes a vault where a sandbox can see it (not under /tmp,
// which every sandbox replaces with its own).
func sandboxVault(t *testing.T) string {
	t.Helper()
	v := filepath.Join(testutil.TempDir(t), "vault")
	if _, err := vaultrepo.Init(v, vaultrepo.InitOptions{Reviewers: []string{"alice"}}); err != nil {
		t.Fatalf("init vault: %v", err)
	}
	return v
}

const verifierPolicy = `verifiers:
  region-check:
    types: [Fact]
    command: [/bin/sh, -c, 'grep -q eu-west-1 "$1" && grep -q 20-domains/src.md sources.json && test -r "$FEDMEM_VAULT/20-domains/src.md" && ! (echo x >> "$1") 2>/dev/null && ! touch "$FEDMEM_VAULT/20-domains/planted.md" 2>/dev/null && echo region ok', region-check]
    profile: strict
    timeout: 60s
  always-fails:
    types: [Runbook]
    command: [/bin/sh, -c, 'echo "contract broken: expected eu-west-1"; echo "on stderr" >&2; exit 3']
  hangs:
    types: [Reference]
    command: [/bin/sh, -c, "sleep 300"]
    timeout: 2s
`

// TestVerifiersRunUnderFedmemRun runs real verifiers through the real
// fedmem-run: one passes (and proves from inside that it sees the draft and
// the vault read-only), one fails, one hangs past its timeout. Each run's
// sandbox session is gone afterwards and the vault is unchanged.
func TestVerifiersRunUnderFedmemRun(t *testing.T) {
	testutil.RequireRoot(t)
	bins := testutil.Binaries(t)
	t.Setenv(verify.FedmemRunEnv, bins.FedmemRun)
	v := sandboxVault(t)
	humanCommit(t, v, map[string]string{"20-domains/src.md": "regions\n"})
	pol, err := policy.Parse("policy.yaml", []byte(verifierPolicy))
	if err != nil {
		t.Fatal(err)
	}
	r := verify.NewRunner(v)
	if r.FindErr() != nil {
		t.Fatal(r.FindErr())
	}
	srcs := []decide.SourceProof{{Resource: "20-domains/src.md", Fingerprint: decide.FingerprintPrefix + blobID(t, v, "20-domains/src.md")}}
	draft := []byte("---\ntype: Fact\ntitle: Region\nsources: [20-domains/src.md]\n---\nWe deploy to eu-west-1.\n")

	pass := r.Run(context.Background(), pol.Verifiers["region-check"], draft, srcs)
	if !pass.Passed || pass.ExitCode != 0 || !strings.Contains(pass.Output, "region ok") || len(pass.OutputSHA256) != 64 {
		t.Fatalf("region-check should pass inside the sandbox: %+v", pass)
	}
	other := r.Run(context.Background(), pol.Verifiers["region-check"], []byte("---\ntype: Fact\n---\nus-east-1\n"), srcs)
	if other.Passed || other.ExitCode == 0 {
		t.Fatalf("region-check must fail on a draft that does not say eu-west-1: %+v", other)
	}

	fail := r.Run(context.Background(), pol.Verifiers["always-fails"], draft, srcs)
	if fail.Passed || fail.ExitCode != 3 || fail.TimedOut || !strings.Contains(fail.Output, "contract broken") || !strings.Contains(fail.Output, "on stderr") {
		t.Fatalf("always-fails: want exit 3 with its output, got %+v", fail)
	}

	hang := r.Run(context.Background(), pol.Verifiers["hangs"], draft, srcs)
	if hang.Passed || !hang.TimedOut {
		t.Fatalf("hangs: want a timeout, got %+v", hang)
	}

	if _, err := os.Lstat(filepath.Join(v, "20-domains", "planted.md")); !os.IsNotExist(err) {
		t.Fatalf("a verifier wrote into the vault: %v", err)
	}
	ents, _ := os.ReadDir(filepath.Join(v, "90-inbox"))
	for _, e := range ents {
		if e.Name() != ".gitkeep" && e.Name() != ".sessions" {
			t.Errorf("verifier session left in the inbox: %s", e.Name())
		}
	}
	checkRepo(t, v)

	// Without fedmem-run nothing runs (never unsandboxed): the draft fails.
	t.Setenv(verify.FedmemRunEnv, filepath.Join(t.TempDir(), "no-such-fedmem-run"))
	none := verify.NewRunner(v).Run(context.Background(), pol.Verifiers["region-check"], draft, srcs)
	if none.Passed || !strings.Contains(none.Error, "fedmem-run not found") {
		t.Fatalf("without fedmem-run: want a failure naming it, got %+v", none)
	}
}

// TestVerifierEvidenceInDecision: checkEvidence runs the type's verifiers
// only when nothing else holds the draft, and turns their outcome into
// findings (a pass is info with the output hash; a failure a flag with the
// output; a timeout a flag).
func TestVerifierEvidenceInDecision(t *testing.T) {
	testutil.RequireRoot(t)
	bins := testutil.Binaries(t)
	t.Setenv(verify.FedmemRunEnv, bins.FedmemRun)
	v := sandboxVault(t)
	humanCommit(t, v, map[string]string{"20-domains/src.md": "regions\n"})
	g, err := Open(Options{Vault: v, AllowSameUser: true, Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	pol, err := policy.Parse("policy.yaml", []byte(verifierPolicy))
	if err != nil {
		t.Fatal(err)
	}
	// The verifiers run only when no other evidence rule holds the draft;
	// the subject rule is TestEvidenceBoundToClaim's.
	pol.AutoPromote = &policy.AutoPromote{AnySubject: true}
	run := verify.NewRunner(v).Run
	for _, c := range []struct {
		typ, body, rule string
	}{
		{"Fact", "We deploy to eu-west-1.", decide.RuleVerifierPassed},
		{"Runbook", "Restart the workers.", decide.RuleVerifierFailed},
		{"Reference", "See the spec.", decide.RuleVerifierTimeout},
	} {
		draft := "---\ntype: " + c.typ + "\ntitle: A " + c.typ + "\nsources: [20-domains/src.md]\n---\n" + c.body + "\n"
		ev, fs := evidenceFor(t, g, pol, draft, "", run)
		got := findingsWith(fs, c.rule)
		if len(got) != 1 || len(ev.Verifiers) != 1 {
			t.Fatalf("%s: want one %s finding, got %v", c.typ, c.rule, fs)
		}
		if !strings.Contains(got[0].Message, ev.Verifiers[0].OutputSHA256) {
			t.Errorf("%s: the finding should carry the output hash: %v", c.typ, got[0])
		}
		if c.rule == decide.RuleVerifierFailed && !strings.Contains(got[0].Message, "contract broken") {
			t.Errorf("a failure should carry the verifier's output: %v", got[0])
		}
	}
	// A draft already held (no vault source) does not start a sandbox.
	ev, fs := evidenceFor(t, g, pol, "---\ntype: Fact\ntitle: No source\n---\neu-west-1\n", "", run)
	if len(ev.Verifiers) != 0 || len(findingsWith(fs, decide.RuleNoEvidence)) != 1 {
		t.Fatalf("held draft: verifiers %v, findings %v", ev.Verifiers, fs)
	}
}
