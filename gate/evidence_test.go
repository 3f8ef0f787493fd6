package gate

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/gate/validate"
	"github.com/fedmem/fedmem/vault/note"
)

// humanCommit writes files into the vault's work tree and commits them with
// the Git CLI, as a human pushing reviewed notes would.
func humanCommit(t *testing.T, v string, files map[string]string) string {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(v, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
		gitCLI(t, v, "add", "--", p)
	}
	gitCLI(t, v, "-c", "user.name=Alice", "-c", "user.email=alice@example.com", "commit", "-q", "-m", "human change")
	return strings.TrimSpace(gitCLI(t, v, "rev-parse", "HEAD"))
}

func blobID(t *testing.T, v, p string) string {
	t.Helper()
	return strings.TrimSpace(gitCLI(t, v, "rev-parse", "HEAD:"+p))
}

// evidenceFor validates a draft and runs checkEvidence against HEAD.
func evidenceFor(t *testing.T, g *Gate, pol *policy.Policy, draft, dest string, run decide.VerifyFunc) (decide.Evidence, []note.Finding) {
	t.Helper()
	res, err := validate.Draft([]byte(draft))
	if err != nil {
		t.Fatal(err)
	}
	if res.Note == nil || note.HasErrors(res.Findings) {
		t.Fatalf("draft invalid: %v", res.Findings)
	}
	_, head, err := g.repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	hv, err := decide.NewHeadView(g.repo, head)
	if err != nil {
		t.Fatal(err)
	}
	folder, _ := pol.Target(res.Meta.Type)
	ev, fs, err := decide.CheckEvidence(context.Background(), pol, decide.EvidenceInput{Res: res, Draft: []byte(draft), Folder: folder, Dest: dest}, hv, run)
	if err != nil {
		t.Fatalf("checkEvidence: %v", err)
	}
	return ev, fs
}

func findingsWith(fs []note.Finding, rule string) []note.Finding {
	var out []note.Finding
	for _, f := range fs {
		if f.Rule == rule {
			out = append(out, f)
		}
	}
	return out
}

func TestSourcesResolveAndFingerprint(t *testing.T) {
	v := newVault(t)
	humanCommit(t, v, map[string]string{
		"20-domains/region.md":        "---\ntype: Fact\ntitle: Deploy region\n---\neu-west-1\n",
		"10-projects/api/contract.md": "# contract\n",
	})
	g := openGate(t, v)
	pol := policy.Default()
	// Resolution and fingerprints; evidence bound to the subject is
	// TestEvidenceBoundToClaim's.
	pol.AutoPromote = &policy.AutoPromote{AnySubject: true}

	cases := []struct {
		name      string
		sources   string
		rule      string // expected rule ("" = none of the evidence rules)
		severity  note.Severity
		line      int
		resolved  int
		wantPaths []string
	}{
		{name: "two vault paths and a URL", sources: "sources:\n  - 20-domains/region.md\n  - resource: 10-projects/api/contract.md\n    author: human:alice\n  - https://example.com/spec\n", resolved: 2},
		{name: "missing path", sources: "sources:\n  - 20-domains/region.md\n  - 20-domains/nope.md\n", rule: decide.RuleSourcesUnresolved, severity: note.Flag, line: 6, resolved: 1},
		{name: "a folder is not a source", sources: "sources:\n  - 20-domains\n", rule: decide.RuleSourcesUnresolved, severity: note.Flag, line: 5},
		{name: "no sources", sources: "", rule: decide.RuleNoEvidence, severity: note.Flag},
		{name: "URL only", sources: "sources:\n  - https://example.com/x\n", rule: decide.RuleNoEvidence, severity: note.Flag, line: 4},
		{name: "dot-dot", sources: "sources:\n  - 20-domains/../00-global/RULES.md\n", rule: decide.RuleSourcePath, severity: note.Error, line: 5},
		{name: "absolute", sources: "sources:\n  - /20-domains/region.md\n", rule: decide.RuleSourcePath, severity: note.Error, line: 5},
		{name: "inbox", sources: "sources:\n  - 90-inbox/s1/other.md\n", rule: decide.RuleSourcePath, severity: note.Error, line: 5},
		{name: "git dir", sources: "sources:\n  - .git/config\n", rule: decide.RuleSourcePath, severity: note.Error, line: 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			draft := "---\ntype: Fact\ntitle: Something new " + c.name + "\n" + c.sources + "---\nBody.\n"
			ev, fs := evidenceFor(t, g, pol, draft, "", nil)
			n := 0
			for _, s := range ev.Sources {
				if s.Fingerprint != "" {
					n++
					if want := decide.FingerprintPrefix + blobID(t, v, s.Resource); s.Fingerprint != want {
						t.Errorf("fingerprint of %s = %s, want %s (git rev-parse)", s.Resource, s.Fingerprint, want)
					}
				}
			}
			if n != c.resolved {
				t.Errorf("resolved %d sources, want %d: %+v", n, c.resolved, ev.Sources)
			}
			if c.rule == "" {
				for _, f := range fs {
					if f.Severity != note.Info {
						t.Errorf("unexpected finding %v", f)
					}
				}
				return
			}
			got := findingsWith(fs, c.rule)
			if len(got) != 1 || got[0].Severity != c.severity || got[0].Line != c.line {
				t.Fatalf("want one %s %s on line %d, got %v (all: %v)", c.severity, c.rule, c.line, got, fs)
			}
		})
	}
}

func TestConflictWithNoteInForce(t *testing.T) {
	v := newVault(t)
	humanCommit(t, v, map[string]string{
		"20-domains/src.md":           "source\n",
		"20-domains/deploy-region.md": "---\ntype: Fact\ntitle: Deploy Region\nsubject: billing event deduplication\n---\nus-east-1\n",
		"20-domains/old-cache.md":     "---\ntype: Fact\ntitle: Cache size\nstatus: deprecated\n---\nold\n",
		"20-domains/draft-note.md":    "---\ntype: Fact\ntitle: Queue name\nstatus: draft\n---\nwithheld or draft\n",
	})
	g := openGate(t, v)
	pol := policy.Default()
	src := "sources: [20-domains/src.md]\n"
	cases := []struct {
		name, front, dest string
		conflict          bool
	}{
		{"same title, other case and spacing", "title: '  deploy   REGION '\n", "20-domains/x.md", true},
		{"same title after NFKC (full-width letters)", "title: Ｄｅｐｌｏｙ Ｒｅｇｉｏｎ\n", "20-domains/x.md", true},
		{"same subject", "title: Workers dedupe by message id\nsubject: Billing  Event Deduplication\n", "20-domains/x.md", true},
		{"target path taken by a note in force", "title: Something else\n", "20-domains/deploy-region.md", true},
		{"title of a deprecated note", "title: cache size\n", "20-domains/x.md", false},
		{"title of a draft note", "title: Queue Name\n", "20-domains/x.md", false},
		{"supersedes the note (left to the supersession rule)", "title: Deploy region\nsupersedes: [20-domains/deploy-region.md]\n", "20-domains/deploy-region.md", false},
		{"different title", "title: Deploy regions for staging\n", "20-domains/x.md", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			draft := "---\ntype: Fact\n" + c.front + src + "---\nBody.\n"
			_, fs := evidenceFor(t, g, pol, draft, c.dest, nil)
			got := findingsWith(fs, decide.RuleConflict)
			if c.conflict != (len(got) > 0) {
				t.Fatalf("conflict = %v, want %v: %v", len(got) > 0, c.conflict, fs)
			}
			for _, f := range got {
				if f.Severity != note.Flag || !strings.Contains(f.Message, "20-domains/deploy-region.md") {
					t.Errorf("conflict finding should be a flag naming the note in force: %v", f)
				}
			}
		})
	}
}

func TestStampWritesFingerprintsAndVerifiers(t *testing.T) {
	v := newVault(t)
	humanCommit(t, v, map[string]string{"20-domains/src.md": "source\n"})
	g := openGate(t, v)
	draft := "---\ntype: Fact\ntitle: Stamped\nsources:\n  - resource: 20-domains/src.md\n    fingerprint: git-blob:0000000000000000000000000000000000000000\n    author: human:alice\n  - https://example.com/doc\n---\nBody.\n"
	ev, fs := evidenceFor(t, g, policy.Default(), draft, "", nil)
	if len(findingsWith(fs, decide.RuleSourceClaim)) != 1 {
		t.Errorf("the draft's own fingerprint should be reported as a claim: %v", fs)
	}
	ev.Verifiers = []decide.VerifierRun{{Name: "contract-test", Passed: true}, {Name: "other", Passed: false}}
	out, err := ev.Stamp([]byte(draft), fixedNow)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := note.Parse(out)
	if n == nil {
		t.Fatalf("stamped note does not parse:\n%s", out)
	}
	f := decide.FactsOf(out)
	if len(f.Fingerprints) != 1 || f.Fingerprints[0].Resource != "20-domains/src.md" || f.Fingerprints[0].Blob != blobID(t, v, "20-domains/src.md") {
		t.Fatalf("fingerprints in the stamped note: %+v\n%s", f.Fingerprints, out)
	}
	s := string(out)
	for _, want := range []string{"author: human:alice", "resource: https://example.com/doc", "by: process:contract-test"} {
		if !strings.Contains(s, want) {
			t.Errorf("stamped note lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "process:other") || strings.Contains(s, "0000000000000000") {
		t.Errorf("stamped note keeps a failed verifier or the draft's fingerprint:\n%s", s)
	}
}
