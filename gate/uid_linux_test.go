package gate

import (
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/fedmem/fedmem/test/testutil"
	"github.com/fedmem/fedmem/vault"
	vaultrepo "github.com/fedmem/fedmem/vault/repo"
)

const (
	gateUID  = 64000
	agentUID = 64001
)

// TestHelperGateAsUser is not a test: TestGateAsSeparateUser runs it as the
// gate uid (without --allow-same-user).
func TestHelperGateAsUser(t *testing.T) {
	v := os.Getenv("FEDMEM_GATE_UID_VAULT")
	if v == "" {
		t.Skip("helper process for TestGateAsSeparateUser")
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

func asUser(uid, gid int, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
	return cmd
}

// The gate runs as its own uid (no passwd entry), the agent as another; the
// agent's drafts are promoted by the gate, and the agent's uid cannot write
// protected vault paths on the host, sandbox or not.
func TestGateAsSeparateUser(t *testing.T) {
	testutil.RequireRoot(t)
	base := testutil.TempDir(t)
	v := filepath.Join(base, "vault")
	if _, err := vaultrepo.Init(v, vaultrepo.InitOptions{Gate: &vault.Owner{UID: gateUID, GID: gateUID}, Reviewers: []string{"alice"}}); err != nil {
		t.Fatal(err)
	}
	state := DefaultStateDir(v)
	os.Mkdir(state, 0o700)
	os.Chown(state, gateUID, gateUID)
	// The agent's session: owned by the agent, writable by the gate's group
	// (the gate must move drafts out and write receipts).
	sd := filepath.Join(v, "90-inbox", "u-1")
	os.Mkdir(sd, 0o770)
	os.Chmod(sd, 0o770)
	os.Chown(sd, agentUID, gateUID)
	draft := filepath.Join(sd, "a.md")
	os.WriteFile(draft, []byte("---\ntype: Fact\ntitle: From another uid\nconfidence: verified\n---\nx\n"), 0o644)
	os.Chown(draft, agentUID, agentUID)
	rec, _ := json.Marshal(SessionRecord{Session: "u-1", Profile: "claude", UID: agentUID, Command: []string{"claude"}})
	recPath := filepath.Join(v, "90-inbox", ".sessions", "u-1.json")
	os.MkdirAll(filepath.Dir(recPath), 0o1777)
	os.WriteFile(recPath, rec, 0o644)
	os.Chown(recPath, agentUID, agentUID)

	// Root is not the gate user: refused.
	if _, err := Open(Options{Vault: v, StateDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "gate user") {
		t.Fatalf("gate as the wrong uid: %v", err)
	}

	// The test binary, copied where the gate uid can execute it.
	self, _ := os.Executable()
	bin := filepath.Join(base, "gate.test")
	in, _ := os.Open(self)
	out, _ := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	io.Copy(out, in)
	in.Close()
	out.Close()
	cmd := asUser(gateUID, gateUID, bin, "-test.run=^TestHelperGateAsUser$")
	cmd.Env = append(os.Environ(), "FEDMEM_GATE_UID_VAULT="+v, "HOME="+base)
	o, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("gate as uid %d: %v\n%s", gateUID, err, o)
	}
	var s Summary
	if err := json.Unmarshal(o[:strings.LastIndexByte(string(o), '}')+1], &s); err != nil {
		t.Fatalf("%v\n%s", err, o)
	}
	if s.Promoted != 1 || !s.Handled() || len(s.Warnings) != 0 {
		t.Fatalf("summary %+v", s)
	}
	d := s.Decisions[0]
	nb, err := os.ReadFile(filepath.Join(v, d.Path))
	if err != nil || !strings.Contains(string(nb), "uid: \"64001\"") || !strings.Contains(string(nb), "by: agent:claude") {
		t.Fatalf("provenance from the session record:\n%s %v", nb, err)
	}
	var st syscall.Stat_t
	syscall.Stat(filepath.Join(v, d.Path), &st)
	if st.Uid != gateUID {
		t.Errorf("promoted file owned by %d", st.Uid)
	}
	if out, err := exec.Command("git", "-c", "safe.directory=*", "-C", v, "fsck", "--strict", "--no-progress").CombinedOutput(); err != nil {
		t.Fatalf("fsck: %v %s", err, out)
	}

	// The agent's uid cannot write protected paths on the host.
	for _, p := range []string{filepath.Join(v, d.Path), filepath.Join(v, ".git", "refs", "heads", "main"), filepath.Join(v, "00-global", "policy.yaml"), filepath.Join(v, "20-domains", "new.md"), filepath.Join(state, "decisions", "x.json")} {
		c := asUser(agentUID, agentUID, "/bin/sh", "-c", `echo pwned > "$1"`, "sh", p)
		out, err := c.CombinedOutput()
		if err == nil || !strings.Contains(string(out), "ermission denied") {
			t.Errorf("agent uid wrote %s: %v %s", p, err, out)
		}
	}
}
