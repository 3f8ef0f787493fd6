package gate

import (
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/fedmem/fedmem/gate/audit"
	"github.com/fedmem/fedmem/test/testutil"
	"github.com/fedmem/fedmem/vault"
	vaultrepo "github.com/fedmem/fedmem/vault/repo"
)

func readReceipt(t *testing.T, sd, name string) Receipt {
	t.Helper()
	var r Receipt
	b, err := os.ReadFile(filepath.Join(sd, ".receipts", name+".json"))
	if err != nil {
		t.Fatalf("receipt for %s: %v", name, err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func auditKinds(t *testing.T, state string) map[string]int {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(state, audit.File))
	n := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e audit.Entry
		if json.Unmarshal([]byte(l), &e) == nil {
			n[e.Kind]++
		}
	}
	return n
}

// Issue 7: a directory named x.md stopped the claim of the rest of its
// session (and, where it could be moved, was deleted with its files).
// Special entries get a receipt; the rest of the session is claimed; a
// directory stays where it is with its contents.
func TestSpecialEntriesDoNotStopSession(t *testing.T) {
	v := newVault(t)
	sd := session(t, v, "sp-1")
	os.Mkdir(filepath.Join(sd, "a-dir.md"), 0o755)
	put(t, filepath.Join(sd, "a-dir.md"), "inner.md", "---\ntype: Fact\n---\nkept\n")
	if err := syscall.Mkfifo(filepath.Join(sd, "b-fifo.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(sd, "c-sock.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	os.Symlink("/etc/passwd", filepath.Join(sd, "d-link.md"))
	put(t, sd, "e-note.md", "---\ntype: Fact\ntitle: After the specials\n---\nbody\n")
	put(t, sd, "f-note.md", "---\ntype: Fact\ntitle: Also after\n---\nbody\n")

	g := openGate(t, v)
	s := once(t, g)
	if len(s.Errors) != 0 {
		t.Fatalf("errors: %v", s.Errors)
	}
	for _, n := range []string{"e-note.md", "f-note.md"} {
		if d := decisionFor(t, s, n); d.State == StateRejected {
			t.Errorf("%s rejected: %+v", n, d.Reasons)
		}
	}
	for _, n := range []string{"b-fifo.md", "c-sock.md", "d-link.md"} {
		if d := decisionFor(t, s, n); d.State != StateRejected || !(hasRule(d, "claim-not-regular") || hasRule(d, "claim-symlink")) {
			t.Errorf("%s: %+v", n, d)
		}
		if r := readReceipt(t, sd, n); r.State != StateRejected {
			t.Errorf("%s receipt %+v", n, r)
		}
	}
	r := readReceipt(t, sd, "a-dir.md")
	if r.State != StateUnclaimed || len(r.Reasons) != 1 || r.Reasons[0].Rule != "claim-not-regular" || !strings.Contains(r.Reasons[0].Message, "directory") {
		t.Fatalf("directory receipt %+v", r)
	}
	if b, err := os.ReadFile(filepath.Join(sd, "a-dir.md", "inner.md")); err != nil || !strings.Contains(string(b), "kept") {
		t.Fatalf("directory contents lost: %v", err)
	}
	// The next pass does not write the receipt again.
	before := auditKinds(t, g.StateDir())["unclaimed"]
	s = once(t, g)
	if len(s.Errors) != 0 || len(s.Decisions) != 0 || auditKinds(t, g.StateDir())["unclaimed"] != before || before != 1 {
		t.Fatalf("second pass: %+v unclaimed entries %d→%d", s, before, auditKinds(t, g.StateDir())["unclaimed"])
	}
}

// TestHelperH4GateOnce is not a test: the two-user tests run it as the gate.
func TestHelperH4GateOnce(t *testing.T) {
	v := os.Getenv("FEDMEM_H4_GATE_VAULT")
	if v == "" {
		t.Skip("helper process")
	}
	g, err := Open(Options{Vault: v})
	if err != nil {
		os.Stdout.WriteString("open: " + err.Error() + "\n")
		os.Exit(3)
	}
	s, err := g.Once()
	if err != nil {
		os.Stdout.WriteString("once: " + err.Error() + "\n")
		os.Exit(4)
	}
	json.NewEncoder(os.Stdout).Encode(s)
	os.Exit(0)
}

const agentsGID = 64002

func runAs(uid, gid int, groups []uint32, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: groups}}
	return cmd
}

// Issue 7: a draft written the usual atomic way (mkstemp → 0600 → rename)
// by an agent uid other than the gate was rejected as unreadable and its
// bytes deleted. In the two-user layout (gate uid in the agents' group,
// session folder 2770 in that group), the gate now leaves it in place with
// a receipt that says how to fix it, claims the rest, and claims it once
// the agent makes it group-readable.
func TestUnreadableDraftKeptTwoUsers(t *testing.T) {
	testutil.RequireRoot(t)
	base := testutil.TempDir(t)
	v := filepath.Join(base, "vault")
	if _, err := vaultrepo.Init(v, vaultrepo.InitOptions{Gate: &vault.Owner{UID: gateUID, GID: gateUID}, Reviewers: []string{"alice"}}); err != nil {
		t.Fatal(err)
	}
	sd := filepath.Join(v, "90-inbox", "mk-1")
	os.Mkdir(sd, 0o700)
	os.Chown(sd, agentUID, agentsGID)
	os.Chmod(sd, os.ModeSetgid|0o770)
	// The agent: a draft by mkstemp+rename (0600), and an ordinary one.
	agent := runAs(agentUID, agentsGID, []uint32{}, "/bin/sh", "-c", `set -e
t=$(mktemp -p "$1" .draft.XXXXXX)
printf -- '---\ntype: Fact\ntitle: Atomic write\n---\nbytes to keep\n' > "$t"
mv "$t" "$1/atomic.md"
printf -- '---\ntype: Fact\ntitle: Plain write\n---\nplain\n' > "$1/plain.md"
chmod 0640 "$1/plain.md"
stat -c '%a %U' "$1/atomic.md"`, "sh", sd)
	if out, err := agent.CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "600") {
		t.Fatalf("agent: %v %s", err, out)
	}
	want, _ := os.ReadFile(filepath.Join(sd, "atomic.md"))

	self, _ := os.Executable()
	bin := filepath.Join(base, "gate.test")
	in, _ := os.Open(self)
	out, _ := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	io.Copy(out, in)
	in.Close()
	out.Close()
	gateOnce := func() Summary {
		t.Helper()
		cmd := runAs(gateUID, gateUID, []uint32{agentsGID}, bin, "-test.run=^TestHelperH4GateOnce$")
		cmd.Env = append(os.Environ(), "FEDMEM_H4_GATE_VAULT="+v, "HOME="+base)
		o, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("gate as uid %d: %v\n%s", gateUID, err, o)
		}
		var s Summary
		if err := json.Unmarshal(o[:strings.LastIndexByte(string(o), '}')+1], &s); err != nil {
			t.Fatalf("%v\n%s", err, o)
		}
		return s
	}
	s := gateOnce()
	if len(s.Errors) != 0 || len(s.Decisions) != 1 || s.Decisions[0].Draft != "plain.md" {
		t.Fatalf("first pass: %+v", s)
	}
	if got, err := os.ReadFile(filepath.Join(sd, "atomic.md")); err != nil || string(got) != string(want) {
		t.Fatalf("the unreadable draft's bytes were not kept in place: %v %q", err, got)
	}
	r := readReceipt(t, sd, "atomic.md")
	if r.State != StateUnclaimed || len(r.Reasons) != 1 || r.Reasons[0].Rule != "claim-unreadable" || !strings.Contains(r.Reasons[0].Message, "chmod g+r 'atomic.md'") || !strings.Contains(r.Reasons[0].Message, "0640") {
		t.Fatalf("receipt %+v", r)
	}
	// The agent can read its receipt (and so learn the fix).
	if o, err := runAs(agentUID, agentsGID, []uint32{}, "cat", filepath.Join(sd, ".receipts", "atomic.md.json")).CombinedOutput(); err != nil {
		t.Fatalf("agent reads the receipt: %v %s", err, o)
	}
	// Fixed by the agent: claimed and decided on the next pass.
	if o, err := runAs(agentUID, agentsGID, []uint32{}, "chmod", "g+r", filepath.Join(sd, "atomic.md")).CombinedOutput(); err != nil {
		t.Fatalf("chmod: %v %s", err, o)
	}
	s = gateOnce()
	if len(s.Errors) != 0 || len(s.Decisions) != 1 || s.Decisions[0].Draft != "atomic.md" || s.Decisions[0].State == StateRejected {
		t.Fatalf("after chmod g+r: %+v", s)
	}
	if _, err := os.Lstat(filepath.Join(sd, "atomic.md")); !os.IsNotExist(err) {
		t.Fatalf("still in the inbox after its decision: %v", err)
	}
	if r := readReceipt(t, sd, "atomic.md"); r.State != s.Decisions[0].State || r.SHA256 == "" {
		t.Fatalf("receipt after the decision %+v", r)
	}
}
