package gate

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/vault/note"
)

// Provenance below the top level (a custom key's mapping, a sources
// entry's author) is moved under `claimed:` in the committed note, and
// the draft is held for it.
func TestNestedProvenanceMovedUnderClaimed(t *testing.T) {
	v := newVault(t)
	seedTrustedVault(t, v)
	setPolicy(t, v, ciPolicy())
	sd := ciSession(t, v, "prov")
	for _, n := range []string{"prov-author-in-sources.md", "prov-nested-keys.md", "prov-second-frontmatter.md"} {
		b, err := os.ReadFile(filepath.Join("testdata/trusted/hostile", n))
		if err != nil {
			t.Fatal(err)
		}
		put(t, sd, n, string(b))
	}
	g := openGate(t, v)
	s := once(t, g)
	for _, n := range []string{"prov-author-in-sources.md", "prov-nested-keys.md", "prov-second-frontmatter.md"} {
		d := decisionFor(t, s, n)
		if d.State != StatePending || !hasRule(d, "claims-authority") {
			t.Fatalf("%s: %s %v; want held by claims-authority", n, d.State, d.Reasons)
		}
		if n == "prov-second-frontmatter.md" {
			continue
		}
		a, err := g.Approve(d.ID, "alice")
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(v, a.Path))
		if err != nil {
			t.Fatal(err)
		}
		nt, _ := note.Parse(got)
		if nt == nil {
			t.Fatalf("committed note does not parse:\n%s", got)
		}
		var bad []string
		for i := 0; i+1 < len(nt.Front.Content); i += 2 {
			k := nt.Front.Content[i].Value
			if k == "claimed" || k == "verified" || k == "generated" || k == "status" || k == "stale_after" {
				continue
			}
			decide.WalkNested(nt.Front.Content[i+1], 1, func(key *yaml.Node) {
				if k == "sources" && key.Value == "fingerprint" {
					return // the gate's own
				}
				bad = append(bad, k+"."+key.Value)
			})
		}
		if len(bad) != 0 {
			t.Errorf("%s: provenance outside claimed: %v\n%s", n, bad, got)
		}
		if !strings.Contains(string(got), "human:alice") {
			t.Errorf("%s: the claim is gone instead of kept under claimed:\n%s", n, got)
		}
	}
	checkRepo(t, v)
}

// A source counts only when it is a note in force about the draft's
// subject; each other kind is named, and no `verified:` is written.
func TestEvidenceBoundToClaim(t *testing.T) {
	v := newVault(t)
	seedTrustedVault(t, v)
	setPolicy(t, v, ciPolicy())
	sd := ciSession(t, v, "evid")
	want := map[string]string{
		"evid-agent-md.md":     decide.RuleSourceContract,
		"evid-rules-md.md":     decide.RuleSourceContract,
		"evid-policy-yaml.md":  decide.RuleSourceContract,
		"evid-index-md.md":     decide.RuleSourceGenerated,
		"evid-log-md.md":       decide.RuleSourceGenerated,
		"evid-deprecated.md":   decide.RuleSourceNotInForce,
		"evid-draft-source.md": decide.RuleSourceNotInForce,
		"evid-gate-made.md":    decide.RuleSourceGateMade,
		"evid-unrelated.md":    decide.RuleSourceOffSubject,
		"evid-unrelated-2.md":  decide.RuleSourceOffSubject,
	}
	for n := range want {
		b, err := os.ReadFile(filepath.Join("testdata/trusted/hostile", n))
		if err != nil {
			t.Fatal(err)
		}
		put(t, sd, n, string(b))
	}
	put(t, sd, "ok.md", "---\ntype: Fact\ntitle: Standby deployment region\nsources: [20-domains/infra/deployment-region.md]\n---\nThe standby region is us-west-2.\n")
	g := openGate(t, v)
	s := once(t, g)
	for n, rule := range want {
		d := decisionFor(t, s, n)
		if d.State != StatePending || !hasRule(d, decide.RuleNoEvidence) || !hasRule(d, rule) {
			t.Errorf("%s: %s %v; want held by no-evidence with %s", n, d.State, d.Reasons, rule)
		}
	}
	d := decisionFor(t, s, "ok.md")
	if d.State != StatePromoted {
		t.Fatalf("a same-subject draft citing a human note in force: %s %v", d.State, d.Reasons)
	}
	b, _ := os.ReadFile(filepath.Join(v, d.Path))
	if !strings.Contains(string(b), "by: "+decide.GateActor) {
		t.Fatalf("promoted without the gate's verified entry:\n%s", b)
	}
}

// A draft whose NFKC form grows past the bound is rejected with that
// reason, before any scan.
func TestNFKCGrowthRejected(t *testing.T) {
	v := newVault(t)
	sd := session(t, v, "nfkc")
	put(t, sd, "fdfa.md", "---\ntype: Fact\ntitle: x\n---\n"+strings.Repeat("\uFDFA", 20000)+"\n")
	put(t, sd, "french.md", "---\ntype: Fact\ntitle: Équipe\n---\nL'équipe de Zürich gère la région ﬁnale.\n")
	g := openGate(t, v)
	s := once(t, g)
	if d := decisionFor(t, s, "fdfa.md"); d.State != StateRejected || !hasRule(d, "normalisation-growth") {
		t.Fatalf("fdfa: %s %v", d.State, d.Reasons)
	}
	if d := decisionFor(t, s, "french.md"); hasRule(d, "normalisation-growth") {
		t.Fatalf("ordinary accented text refused: %v", d.Reasons)
	}
}

// Draft names reach the log escaped: no C1, bidi or line separator raw.
func TestLogEscapesDraftNames(t *testing.T) {
	v := newVault(t)
	sd := session(t, v, "logs")
	names := []string{"a\u202egnp.md", "b\u0085c.md", "c\u2028d.md", "e\u2066f.md"}
	for _, n := range names {
		put(t, sd, n, "---\ntype: Fact\ntitle: log "+n[:1]+"\n---\nx\n")
	}
	var buf bytes.Buffer
	g, err := Open(Options{Vault: v, AllowSameUser: true, Now: func() time.Time { return fixedNow }, Logger: slog.New(slog.NewJSONHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	once(t, g)
	out := buf.String()
	for _, bad := range []string{"\u202e", "\u0085", "\u2028", "\u2066"} {
		if strings.Contains(out, bad) {
			t.Errorf("log holds %U raw", []rune(bad)[0])
		}
	}
	if !strings.Contains(out, `\\u{202E}`) {
		t.Errorf("log does not name the escaped character:\n%s", out)
	}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Errorf("log line is not JSON: %q", l)
		}
	}
}

// A receipt never confirms another session's held or refused draft.
func TestDuplicateReceiptDoesNotConfirmOtherSession(t *testing.T) {
	v := newVault(t)
	x := "---\ntype: Fact\ntitle: Incident of Bob\n---\nBob's laptop was lost on Tuesday.\n"
	put(t, session(t, v, "victim"), "x.md", x)
	g := openGate(t, v)
	a := decisionFor(t, once(t, g), "x.md")
	sd := session(t, v, "guesser")
	put(t, sd, "guess.md", x)
	b := decisionFor(t, once(t, g), "guess.md")
	if a.State != StatePending || b.State != StatePending || b.DuplicateOf != a.ID {
		t.Fatalf("setup: %s, %s duplicate_of %q", a.State, b.State, b.DuplicateOf)
	}
	rb, err := os.ReadFile(filepath.Join(sd, ".receipts", "guess.md.json"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(rb), a.ID) || strings.Contains(string(rb), "duplicate") || strings.Contains(string(rb), "identical") {
		t.Fatalf("receipt confirms the other session's draft:\n%s", rb)
	}
	// The same session resubmitting its own draft is told it is a duplicate.
	put(t, session(t, v, "victim"), "x2.md", x)
	if c := decisionFor(t, once(t, g), "x2.md"); !hasRule(c, "duplicate") {
		t.Fatalf("own duplicate: %v", c.Reasons)
	}
}
