package gate

import (
	"encoding/json"
	"fmt"
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
	gateUID         = 64000
	agentUID        = 64001
	forgerUID       = 64002
	forgerGroupGID  = 64005 // the agents' group (host users may be in it)
	testLauncherGID = 64010 // fedmem-run's setgid group (no user is in it)
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
	os.WriteFile(draft, []byte("---\ntype: Fact\ntitle: From another uid\nsources: [10-projects/another-uid.md]\n---\nAnother uid wrote this draft.\n"), 0o644)
	os.Chown(draft, agentUID, agentUID)
	// The install's session provenance: .sessions belongs to the gate, group
	// testLauncherGID, closed to others; the policy names the launcher group and
	// trusts the session's (pinned) profile.
	sessions := filepath.Join(v, "90-inbox", ".sessions")
	os.MkdirAll(sessions, 0o770)
	os.Chown(sessions, gateUID, testLauncherGID)
	os.Chmod(sessions, 0o3770)
	pol := fmt.Sprintf("version: 1\nreviewers: [alice]\nauto_promote:\n  profiles: [\"ci-docs@%s\"]\n  launcher_group: \"%d\"\n", testProfileHash, testLauncherGID)
	os.WriteFile(filepath.Join(v, "00-global", "policy.yaml"), []byte(pol), 0o644)
	// The note the drafts cite: a human's, in force, about their subject
	// (the agent contract is not evidence, issue 24).
	srcNote := filepath.Join(v, "10-projects", "another-uid.md")
	os.MkdirAll(filepath.Dir(srcNote), 0o755)
	os.WriteFile(srcNote, []byte("---\ntype: Fact\ntitle: Another uid\n---\nDrafts may come from another uid.\n"), 0o644)
	gitCLI(t, v, "-c", "safe.directory=*", "add", "00-global/policy.yaml", "10-projects/another-uid.md")
	gitCLI(t, v, "-c", "safe.directory=*", "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "-m", "policy")
	testutil.ChownTree(filepath.Join(v, ".git"), gateUID, gateUID)
	os.Chown(filepath.Join(v, "00-global", "policy.yaml"), gateUID, gateUID)
	os.Chown(filepath.Dir(srcNote), gateUID, gateUID)
	os.Chown(srcNote, gateUID, gateUID)
	// The legitimate record: written by a process of the agent's uid holding
	// the launcher group as its egid, as the setgid fedmem-run does.
	writeRec := func(uid, gid int, groups []uint32, sess string) ([]byte, error) {
		rec, _ := json.Marshal(SessionRecord{Session: sess, Profile: "ci-docs", ProfileHash: testProfileHash, UID: uid, Command: []string{"claude"}})
		c := asUser(uid, gid, "/bin/sh", "-c", `umask 022; cat > "$1"`, "sh", filepath.Join(sessions, sess+".json"))
		c.SysProcAttr.Credential.Groups = groups
		c.Stdin = strings.NewReader(string(rec))
		return c.CombinedOutput()
	}
	if out, err := writeRec(agentUID, testLauncherGID, nil, "u-1"); err != nil {
		t.Fatalf("launcher-group record: %v %s", err, out)
	}
	// The forger: a host user in the agents' group, no fedmem-run. Its
	// session folder and drafts are easy; its record cannot be made where
	// the gate looks (EACCES), and one planted for it there (as a world-
	// writable legacy .sessions would allow) has the wrong group.
	fsd := filepath.Join(v, "90-inbox", "u-2")
	os.Mkdir(fsd, 0o770)
	os.Chmod(fsd, 0o770)
	os.Chown(fsd, forgerUID, gateUID)
	fd := filepath.Join(fsd, "f.md")
	os.WriteFile(fd, []byte("---\ntype: Fact\ntitle: From a forged session\nsources: [10-projects/another-uid.md]\n---\ny\n"), 0o644)
	os.Chown(fd, forgerUID, forgerGroupGID)
	wout, err := writeRec(forgerUID, forgerGroupGID, []uint32{forgerGroupGID}, "u-2")
	if err == nil || !strings.Contains(string(wout), "ermission denied") {
		t.Fatalf("a host user wrote a session record: %v %s", err, wout)
	}
	rec2, _ := json.Marshal(SessionRecord{Session: "u-2", Profile: "ci-docs", ProfileHash: testProfileHash, UID: forgerUID, Command: []string{"claude"}})
	planted := filepath.Join(sessions, "u-2.json")
	os.WriteFile(planted, rec2, 0o644)
	os.Chown(planted, forgerUID, forgerGroupGID)

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
	if s.Promoted != 1 || s.Pending != 1 || !s.Handled() || len(s.Warnings) != 0 {
		t.Fatalf("summary %+v", s)
	}
	var d Decision
	for _, x := range s.Decisions {
		switch x.Session {
		case "u-1":
			d = x
		case "u-2":
			if x.State != StatePending || !hasRule(x, "origin-unverified") || x.Origin != "unverified" {
				t.Errorf("forged session: %+v", x)
			}
			for _, r := range x.Reasons {
				if r.Rule == "origin-unverified" && !strings.Contains(r.Message, "not the launcher group") {
					t.Errorf("forged session refused for another reason: %s", r.Message)
				}
			}
		}
	}
	if d.State != StatePromoted || d.Origin != "trusted:ci-docs" {
		t.Fatalf("launcher-group session: %+v", d)
	}
	nb, err := os.ReadFile(filepath.Join(v, d.Path))
	if err != nil || !strings.Contains(string(nb), "uid: \"64001\"") || !strings.Contains(string(nb), "by: agent:claude") || !strings.Contains(string(nb), "origin: verified") {
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
