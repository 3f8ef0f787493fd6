package gate

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/gate/intake"
	"github.com/fedmem/fedmem/gate/validate"
	"github.com/fedmem/fedmem/vault/note"
)

// secretsInScan are the fake secrets of testdata/scan: smuggled through YAML
// escapes, an escaped line break, a Markdown escape and a draft file name.
// None may reach a Git object, a commit message or a receipt.
var secretsInScan = []string{
	"ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d",
	"ghp_KLzdocJ2isAjIhKtJ0RlgLKOmxgJTeKdNnFX",
	"ghp_IBXuDL7DxtpYlSXpfKtHF4vUCsMehGAkWvj7",
	"ghp_wtDDbxHKas1VOqg6YYZYn9ZhyiA4uoRgnatm",
	"MIIEpAIBAAKCAQEA+1fjORS/6ilI8ihN5KXSc7Tvo/hBKqFYY/kv5ZJr3J1TWDtk",
	"wtDDb+xHKas1VOqg6YYZYn9ZhyiA4uoRgnatmUdjAWtGSU8po+799NksnRH9ucAU",
}

// TestScanWhatYouCommit sends the hostile drafts of testdata/scan (content
// smuggled past byte-level scans: YAML escapes, entities, Markdown and HTML
// parser tricks, invisible Unicode, gate-owned keys in other letter cases,
// secrets in file names) through a real gate on a real vault, has a human
// approve everything the gate held, and then checks what Git holds: no
// secret in any object (commit messages included) and no gate-owned key at
// the top level of a committed note other than the gate's own.
func TestScanWhatYouCommit(t *testing.T) {
	raw, err := os.ReadFile("testdata/scan.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]struct {
		States []string `json:"states"`
		Rules  []string `json:"rules"`
	}
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	v := newVault(t)
	sd := session(t, v, "scan")
	files, _ := os.ReadDir("testdata/scan")
	if len(files) != len(want) {
		t.Fatalf("%d fixtures but %d expectations", len(files), len(want))
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join("testdata/scan", f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		put(t, sd, f.Name(), string(b))
	}
	g := openGate(t, v)
	s := once(t, g)
	if !s.Handled() {
		t.Fatalf("not everything handled: %+v", s)
	}
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	var held []Decision
	for _, name := range names {
		e := want[name]
		d := decisionFor(t, s, name)
		if d.State == StatePending {
			held = append(held, d)
		}
		t.Run(name, func(t *testing.T) {
			if !slices.Contains(e.States, d.State) {
				t.Fatalf("state %s, want one of %v; reasons %v", d.State, e.States, d.Reasons)
			}
			got := map[string]bool{}
			for _, r := range d.Reasons {
				got[fmt.Sprintf("%s@%d", r.Rule, r.Line)] = true
			}
			for _, r := range e.Rules {
				if !got[r] {
					t.Errorf("missing reason %s; got %v", r, d.Reasons)
				}
			}
			rb, err := os.ReadFile(filepath.Join(sd, ".receipts", receiptFileName(name)))
			if err != nil {
				t.Fatalf("no receipt: %v", err)
			}
			for _, sec := range secretsInScan {
				// The receipt's own name echoes the draft's file name; its
				// content must not repeat a secret.
				if strings.Contains(string(rb), sec) && !strings.Contains(name, sec) {
					t.Fatalf("receipt echoes a secret: %s", rb)
				}
			}
		})
	}
	// A human approves everything the gate held: what the reviewer sees is
	// what gets committed, and the commit-time scan still stands between a
	// held draft and Git.
	approved := 0
	for _, d := range held {
		if _, err := g.Approve(d.ID, "alice"); err != nil {
			t.Logf("approve %s (%s): %v", d.ID, d.Draft, err)
			continue
		}
		approved++
	}
	if approved == 0 {
		t.Fatalf("no held draft could be approved; the commit path was not exercised")
	}
	checkRepo(t, v)
	out, err := exec.Command("git", "-C", v, "cat-file", "--batch-all-objects", "--batch").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, sec := range secretsInScan {
		if strings.Contains(string(out), sec) {
			t.Errorf("secret %s… reached a Git object", sec[:8])
		}
	}
	if strings.Contains(string(out), "BEGIN RSA PRIVATE KEY") {
		t.Errorf("a private key header reached a Git object")
	}
	checkCommittedNotes(t, v)
}

func receiptFileName(name string) string {
	if len(name)+len(".json") > 255 {
		return intake.ReceiptName(name)
	}
	return name + ".json"
}

// checkCommittedNotes re-parses every note the gate committed and checks
// that gate-owned keys appear at the top level only in their canonical
// spelling (the gate's own values), never in another letter case.
func checkCommittedNotes(t *testing.T, v string) {
	t.Helper()
	ls := gitCLI(t, v, "ls-tree", "-r", "--name-only", "HEAD")
	n := 0
	for _, p := range strings.Split(strings.TrimSpace(ls), "\n") {
		if !strings.HasSuffix(p, ".md") || strings.HasPrefix(p, "00-") || strings.HasSuffix(p, "/index.md") || strings.HasSuffix(p, "/log.md") || !strings.Contains(p, "/") {
			continue
		}
		b := []byte(gitCLI(t, v, "show", "HEAD:"+p))
		nt, fs := note.Parse(b)
		if nt == nil {
			t.Errorf("%s: committed note does not parse: %v", p, fs)
			continue
		}
		if _, ok := nt.Scalar("status"); !ok {
			continue // not written by the gate (init templates)
		}
		n++
		for i := 0; i+1 < len(nt.Front.Content); i += 2 {
			k := nt.Front.Content[i].Value
			if note.IsGateOwned(k) && k != strings.ToLower(k) {
				t.Errorf("%s: gate-owned key %q at the top level beside the gate's own", p, k)
			}
		}
	}
	if n == 0 {
		t.Errorf("no gate-written note found to check")
	}
}

// The commit message names the session, whose directory name comes from
// the inbox: a session named like a token must not put it into Git. The
// draft itself is clean, so only the commit-time scan can stop it.
func TestCommitScanRefusesSecretInSessionName(t *testing.T) {
	const tok = "ghp_Q3vN8xLm2Rt6Yw9Zp4Kc7Hd1Fj5Gs0BaEu3X"
	v := newVault(t)
	sd := session(t, v, tok)
	put(t, sd, "plain.md", "---\ntype: Fact\ntitle: Plain note\n---\nNothing to see.\n")
	g := openGate(t, v)
	s := once(t, g)
	d := decisionFor(t, s, "plain.md")
	t.Logf("decision %s %v", d.State, d.Reasons)
	if d.State != StatePending && d.State != StatePromoted {
		t.Fatalf("the draft must reach the commit path (held or promoted): %+v", d)
	}
	if d.State == StatePending {
		_, err := g.Approve(d.ID, "alice")
		t.Logf("approval: %v", err)
		var refused *validate.RefusedError
		if !errors.As(err, &refused) || !slices.ContainsFunc(refused.Findings, func(f note.Finding) bool { return f.Rule == "secret-commit-message" }) {
			t.Fatalf("approval: %v; want a refusal citing secret-commit-message", err)
		}
		if strings.Contains(err.Error(), tok) {
			t.Fatalf("refusal echoes the secret: %v", err)
		}
	} else if d.State == StatePromoted {
		t.Fatalf("promoted with the session name in the commit message: %+v", d)
	}
	out, err := exec.Command("git", "-C", v, "cat-file", "--batch-all-objects", "--batch").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), tok) {
		t.Fatalf("the session's token reached a Git object")
	}
	checkRepo(t, v)
}
