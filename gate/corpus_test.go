package gate

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/fedmem/fedmem/gate/intake"
)

// expectation is one entry of testdata/corpus.json: the state a fixture must
// reach and rules ("rule@line", line 0 = whole draft) its decision must cite.
type expectation struct {
	State string   `json:"state"`
	Rules []string `json:"rules"`
	Path  string   `json:"path"`
}

// secretsInCorpus must never appear in any Git object of the vault.
var secretsInCorpus = []string{
	"AKIAZ4XYQW7NJ2KPL5RB", "AKIAQ7RMXW2JNP4KZL6B", "ghp_4Vb8kQm2Jx9pLr7sTz3Wn6Yc1Hd5Fg0KaEi2",
	"MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun", "YXdzX2FjY2Vzc19rZXlfaWQgPSBBS0lB",
}

func TestHostileCorpus(t *testing.T) {
	raw, err := os.ReadFile("testdata/corpus.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]expectation
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	v := newVault(t)
	sd := session(t, v, "corpus")
	files, _ := os.ReadDir("testdata/corpus")
	if len(files) != len(want) {
		t.Fatalf("%d fixtures but %d expectations", len(files), len(want))
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join("testdata/corpus", f.Name()))
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
	for _, name := range names {
		e := want[name]
		t.Run(name, func(t *testing.T) {
			d := decisionFor(t, s, name)
			if d.State != e.State {
				t.Fatalf("state %s, want %s; reasons %v", d.State, e.State, d.Reasons)
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
			if e.Path != "" && d.Path != e.Path {
				t.Errorf("path %q, want %q", d.Path, e.Path)
			}
			if d.State == StatePromoted && d.Commit == "" {
				t.Errorf("promoted without a commit")
			}
			rb, err := os.ReadFile(filepath.Join(sd, ".receipts", name+".json"))
			if err != nil {
				t.Fatalf("no receipt: %v", err)
			}
			var rc Receipt
			if err := json.Unmarshal(rb, &rc); err != nil || rc.State != d.State {
				t.Fatalf("receipt %s: %v", rb, err)
			}
			for _, sec := range secretsInCorpus {
				if strings.Contains(string(rb), sec) {
					t.Fatalf("receipt echoes a secret: %s", rb)
				}
			}
		})
	}
	checkRepo(t, v)
	out, err := exec.Command("git", "-C", v, "cat-file", "--batch-all-objects", "--batch").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, sec := range secretsInCorpus {
		if strings.Contains(string(out), sec) {
			t.Errorf("secret %q reached a Git object", sec[:8])
		}
	}
	left, _ := os.ReadDir(sd)
	for _, e := range left {
		if e.Name() != ".receipts" {
			t.Errorf("%s left in the inbox", e.Name())
		}
	}
}

// Filesystem fixtures made at test time: what the claim must refuse without
// following, blocking or reading.
func TestClaimFilesystemFixtures(t *testing.T) {
	v := newVault(t)
	sd := session(t, v, "fs")
	secret := filepath.Join(t.TempDir(), "id_rsa")
	const secretText = "TOP-SECRET-CONTENT-0123456789"
	put(t, filepath.Dir(secret), "id_rsa", "---\ntype: Fact\nconfidence: verified\n---\n"+secretText+"\n")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(secret, filepath.Join(sd, "symlink.md")))
	must(os.Symlink("../../00-global/AGENT.md", filepath.Join(sd, "relative-symlink.md")))
	must(syscall.Mkfifo(filepath.Join(sd, "fifo.md"), 0o644))
	put(t, sd, "hardlink.md", "---\ntype: Fact\nconfidence: verified\n---\n"+secretText+"\n")
	must(os.Link(filepath.Join(sd, "hardlink.md"), filepath.Join(t.TempDir(), "other-name")))
	f, err := os.Create(filepath.Join(sd, "sparse.md"))
	must(err)
	must(f.Truncate(1 << 30))
	f.Close()
	must(os.Mkdir(filepath.Join(sd, "subdir.md"), 0o755))
	put(t, sd, "writing.md.tmp", "---\ntype: Fact\n---\n")
	put(t, sd, ".hidden.md", "---\ntype: Fact\n---\n")
	// A socket cannot be opened at all (ENXIO).
	sock := filepath.Join(sd, "sock.md")
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	must(err)
	must(syscall.Bind(fd, &syscall.SockaddrUnix{Name: sock}))
	defer syscall.Close(fd)

	g := openGate(t, v)
	s := once(t, g)
	cases := map[string]string{
		"symlink.md":          "claim-symlink",
		"relative-symlink.md": "claim-symlink",
		"fifo.md":             "claim-not-regular",
		"hardlink.md":         "claim-hardlink",
		"sparse.md":           "claim-too-large",
		"sock.md":             "claim-not-regular",
	}
	for name, rule := range cases {
		d := decisionFor(t, s, name)
		if d.State != StateRejected || !hasRule(d, rule) {
			t.Errorf("%s: %+v; want rejected by %s", name, d, rule)
		}
		if d.SHA256 != "" {
			t.Errorf("%s: was read (sha256 %s)", name, d.SHA256)
		}
	}
	// A directory cannot be moved out of a session the gate does not own,
	// and its files are bytes nobody decided on: it stays, with a receipt.
	if r := readReceipt(t, sd, "subdir.md"); r.State != StateUnclaimed || r.Reasons[0].Rule != "claim-not-regular" {
		t.Errorf("subdir.md receipt %+v", r)
	}
	for _, name := range []string{"writing.md.tmp", ".hidden.md", "subdir.md"} {
		if _, err := os.Lstat(filepath.Join(sd, name)); err != nil {
			t.Errorf("%s must be left alone: %v", name, err)
		}
	}
	if b, _ := os.ReadFile(secret); !strings.Contains(string(b), secretText) {
		t.Errorf("symlink target changed")
	}
	out, _ := exec.Command("git", "-C", v, "cat-file", "--batch-all-objects", "--batch").Output()
	if strings.Contains(string(out), secretText) {
		t.Fatal("a file behind a link reached Git")
	}
	checkRepo(t, v)
	// The agent's planted .receipts symlink must not redirect receipts.
}

func TestReceiptsNeverFollowPlantedLinks(t *testing.T) {
	v := newVault(t)
	sd := session(t, v, "r1")
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(sd, ".receipts")); err != nil {
		t.Fatal(err)
	}
	put(t, sd, "a.md", "---\ntype: Fact\n---\n")
	g := openGate(t, v)
	d := decisionFor(t, once(t, g), "a.md")
	if d.State != StatePending {
		t.Fatalf("%+v", d)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("receipt written through the planted symlink: %v", ents)
	}
	// Second case: receipts dir real, receipt name a planted symlink.
	sd2 := session(t, v, "r2")
	os.Mkdir(filepath.Join(sd2, ".receipts"), 0o755)
	victim := filepath.Join(outside, "victim")
	put(t, outside, "victim", "keep")
	os.Symlink(victim, filepath.Join(sd2, ".receipts", "b.md.json"))
	put(t, sd2, "b.md", "---\ntype: Fact\n---\nb\n")
	decisionFor(t, once(t, g), "b.md")
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Fatalf("receipt overwrote the symlink's target: %q", b)
	}
	if fi, err := os.Lstat(filepath.Join(sd2, ".receipts", "b.md.json")); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("receipt should replace the planted link with a file: %v %v", fi, err)
	}
}

// Odd inbox names (invalid UTF-8, newline, very long) are handled by their
// exact bytes: the receipt lands next to them under the same name.
func TestOddDraftNames(t *testing.T) {
	v := newVault(t)
	sd := session(t, v, "names")
	long := strings.Repeat("n", 250) + ".md"
	names := []string{"bad\xff\xfe.md", "line\nbreak.md", "sp ace.md", long, "-dash.md"}
	for _, n := range names {
		put(t, sd, n, "---\ntype: Fact\ntitle: odd name "+fmt.Sprint(len(n))+"\n---\nx "+n+"\n")
	}
	g := openGate(t, v)
	s := once(t, g)
	if len(s.Decisions) != len(names) || !s.Handled() {
		t.Fatalf("%+v", s)
	}
	for _, n := range names {
		rn := n + ".json"
		if len(rn) > 255 {
			rn = intake.ReceiptName(n)
		}
		if _, err := os.Stat(filepath.Join(sd, ".receipts", rn)); err != nil {
			t.Errorf("receipt for %q: %v", n, err)
		}
	}
}
