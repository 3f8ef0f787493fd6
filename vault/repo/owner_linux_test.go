package repo_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/fedmem/fedmem/test/testutil"
	"github.com/fedmem/fedmem/vault"
	"github.com/fedmem/fedmem/vault/repo"
)

// Test identities. None has a passwd entry on the test machines; the tests
// check that for the gate uid they rely on.
const (
	gateUID   = 64000
	agentUID  = 64001
	otherUID  = 64002
	agentsGID = 64010
)

// asUser runs a shell script as uid:gid with the given supplementary groups
// (none if empty), through setpriv from util-linux: a real unprivileged
// process, judged by the kernel.
func asUser(t *testing.T, uid, gid int, groups []int, script string) (string, error) {
	t.Helper()
	args := []string{"--reuid", fmt.Sprint(uid), "--regid", fmt.Sprint(gid)}
	if len(groups) == 0 {
		args = append(args, "--clear-groups")
	} else {
		var gs []string
		for _, g := range groups {
			gs = append(gs, fmt.Sprint(g))
		}
		args = append(args, "--groups", strings.Join(gs, ","))
	}
	args = append(args, "--", "/bin/sh", "-c", script)
	out, err := exec.Command("setpriv", args...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

func numericGate(t *testing.T) vault.Owner {
	t.Helper()
	if _, err := user.LookupId(fmt.Sprint(gateUID)); err == nil {
		t.Fatalf("uid %d has a passwd entry on this machine; the test needs one without", gateUID)
	}
	g, err := vault.ResolveUser(fmt.Sprint(gateUID))
	if err != nil {
		t.Fatal(err)
	}
	if g != (vault.Owner{UID: gateUID, GID: gateUID}) {
		t.Fatalf("ResolveUser(%d) = %+v", gateUID, g)
	}
	return g
}

// TestInitOwnershipNumericUID: every path of the vault belongs to a gate uid
// that has no passwd entry, with the promised modes.
func TestInitOwnershipNumericUID(t *testing.T) {
	testutil.RequireRoot(t)
	gate := numericGate(t)
	dir := testutil.TempDir(t)
	res, err := repo.Init(dir, repo.InitOptions{Gate: &gate})
	if err != nil {
		t.Fatal(err)
	}
	if res.Gate != gate || res.InboxMode != "01777" || res.AgentGroup != nil {
		t.Errorf("result: gate=%+v inbox=%s group=%v", res.Gate, res.InboxMode, res.AgentGroup)
	}
	checkTree(t, dir, gateUID, gateUID, fs.ModeSticky|0o777)
	checkGit(t, dir)

	// Re-run as root without --gate-user: the vault stays the gate's.
	again, err := repo.Init(dir, repo.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.Gate.UID != gateUID || len(again.Actions) != 0 || again.Commit != "" {
		t.Errorf("re-run as root: gate=%+v actions=%v commit=%q", again.Gate, again.Actions, again.Commit)
	}
	checkTree(t, dir, gateUID, gateUID, fs.ModeSticky|0o777)
}

// checkTree lstat()s every path of the vault (.git included).
func checkTree(t *testing.T, dir string, uid, gid uint32, inboxMode fs.FileMode) {
	t.Helper()
	inboxGID := gid
	if inboxMode&fs.ModeSetgid != 0 {
		inboxGID = agentsGID
	}
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		n++
		rel, _ := filepath.Rel(dir, p)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		wantGID := gid
		if rel == vault.InboxDir || rel == vault.SessionsDir {
			wantGID = inboxGID
		}
		if st.Uid != uid || st.Gid != wantGID {
			t.Errorf("%s: owner %d:%d, want %d:%d", rel, st.Uid, st.Gid, uid, wantGID)
		}
		m := fi.Mode()
		switch {
		case rel == ".git" || strings.HasPrefix(rel, ".git/"):
			if m.Perm()&0o022 != 0 || m&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
				t.Errorf("%s: mode %v is writable by group or others", rel, m)
			}
		case rel == vault.InboxDir || rel == vault.SessionsDir:
			if m != fs.ModeDir|inboxMode {
				t.Errorf("%s: mode %v, want %v", rel, m, fs.ModeDir|inboxMode)
			}
		case d.IsDir():
			if m != fs.ModeDir|0o755 {
				t.Errorf("%s: mode %v, want drwxr-xr-x", rel, m)
			}
		default:
			if m != 0o644 {
				t.Errorf("%s: mode %v, want -rw-r--r--", rel, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < len(vault.Folders)+len(wantTracked) {
		t.Fatalf("walked only %d paths", n)
	}
}

// TestInitAgentGroup: with an agent group the inbox is 03770; members create
// sessions, others cannot even enter.
func TestInitAgentGroup(t *testing.T) {
	testutil.RequireRoot(t)
	gate := numericGate(t)
	dir := testutil.TempDir(t)
	res, err := repo.Init(dir, repo.InitOptions{Gate: &gate, AgentGroup: &vault.Group{GID: agentsGID}})
	if err != nil {
		t.Fatal(err)
	}
	if res.InboxMode != "03770" {
		t.Errorf("inbox mode %s, want 03770", res.InboxMode)
	}
	checkTree(t, dir, gateUID, gateUID, fs.ModeSetgid|fs.ModeSticky|0o770)
	checkGit(t, dir)

	inbox := filepath.Join(dir, vault.InboxDir)
	if out, err := asUser(t, agentUID, agentUID, []int{agentsGID}, "mkdir "+inbox+"/s-member"); err != nil {
		t.Fatalf("group member cannot create a session: %v: %s", err, out)
	}
	// setgid: the new session folder carries the agent group.
	if _, g := owner(t, filepath.Join(inbox, "s-member")); g != agentsGID {
		t.Errorf("session folder gid %d, want %d", g, agentsGID)
	}
	out, err := asUser(t, otherUID, otherUID, nil, "mkdir "+inbox+"/s-outsider")
	if err == nil || !strings.Contains(out, "Permission denied") {
		t.Errorf("non-member mkdir in the inbox: err=%v out=%q, want Permission denied", err, out)
	}
	if _, err := os.Lstat(filepath.Join(inbox, "s-outsider")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("outsider's session exists: %v", err)
	}

	// A re-run without --agent-group keeps the group restriction.
	again, err := repo.Init(dir, repo.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if again.AgentGroup == nil || again.AgentGroup.GID != agentsGID || len(again.Actions) != 0 {
		t.Errorf("re-run: group=%v actions=%v", again.AgentGroup, again.Actions)
	}
}

// TestUnprivilegedAgentCannotWriteProtected: an agent uid (not the gate) can
// create its own session folder, but cannot write the contract folder, nor
// remove or rename another session's folder or the gate's entries.
func TestUnprivilegedAgentCannotWriteProtected(t *testing.T) {
	testutil.RequireRoot(t)
	gate := numericGate(t)
	dir := testutil.TempDir(t)
	if _, err := repo.Init(dir, repo.InitOptions{Gate: &gate}); err != nil {
		t.Fatal(err)
	}
	inbox := filepath.Join(dir, vault.InboxDir)
	global := filepath.Join(dir, vault.GlobalDir)

	for _, tc := range []struct {
		name, script, want string
	}{
		{"create in 00-global", "echo x > " + global + "/new.md", "Permission denied"},
		{"overwrite AGENT.md", "echo x > " + global + "/AGENT.md", "Permission denied"},
		{"remove AGENT.md", "rm -f " + global + "/AGENT.md", "Permission denied"},
		{"write .git", "echo x > " + dir + "/.git/HEAD", "Permission denied"},
		{"create in .git/objects", "mkdir " + dir + "/.git/objects/zz", "Permission denied"},
	} {
		out, err := asUser(t, agentUID, agentUID, nil, tc.script)
		if err == nil || !strings.Contains(out, tc.want) {
			t.Errorf("%s: err=%v out=%q, want failure with %q", tc.name, err, out, tc.want)
		}
	}
	if _, err := os.Lstat(filepath.Join(global, "new.md")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("00-global/new.md exists after a refused write: %v", err)
	}

	// Each agent creates its own session; the other's survives every attempt.
	if out, err := asUser(t, agentUID, agentUID, nil, "mkdir "+inbox+"/s-mine && echo d > "+inbox+"/s-mine/draft.md"); err != nil {
		t.Fatalf("agent cannot create its session: %v: %s", err, out)
	}
	if out, err := asUser(t, otherUID, otherUID, nil, "mkdir -m 0777 "+inbox+"/s-other"); err != nil {
		t.Fatalf("other agent cannot create its session: %v: %s", err, out)
	}
	for _, tc := range []struct {
		name, script string
	}{
		{"rmdir another session", "rmdir " + inbox + "/s-other"},
		{"rename another session", "mv " + inbox + "/s-other " + inbox + "/s-stolen"},
		{"replace another session", "mv -T " + inbox + "/s-mine " + inbox + "/s-other"},
		{"remove the inbox placeholder", "rm -f " + inbox + "/.gitkeep"},
		{"remove the sessions folder", "rmdir " + inbox + "/.sessions"},
		{"rename the sessions folder", "mv " + inbox + "/.sessions " + inbox + "/x"},
	} {
		out, err := asUser(t, agentUID, agentUID, nil, tc.script)
		// The sticky bit makes the kernel answer EPERM, not EACCES.
		if err == nil || !strings.Contains(out, "Operation not permitted") {
			t.Errorf("%s: err=%v out=%q, want Operation not permitted", tc.name, err, out)
		}
	}
	for _, p := range []string{"s-other", ".gitkeep", ".sessions"} {
		if _, err := os.Lstat(filepath.Join(inbox, p)); err != nil {
			t.Errorf("%s is gone: %v", p, err)
		}
	}
	if uid, _ := owner(t, filepath.Join(inbox, "s-other")); uid != otherUID {
		t.Errorf("s-other now belongs to uid %d", uid)
	}
	checkGit(t, dir)
}

// TestInitRefusesForeignInboxEntries: if .sessions is missing, an agent can
// create that name first (the inbox is world-writable). Init must neither
// adopt the agent's folder nor follow its symlink.
func TestInitRefusesForeignInboxEntries(t *testing.T) {
	testutil.RequireRoot(t)
	gate := numericGate(t)
	dir := testutil.TempDir(t)
	if _, err := repo.Init(dir, repo.InitOptions{Gate: &gate}); err != nil {
		t.Fatal(err)
	}
	sessions := filepath.Join(dir, vault.SessionsDir)
	if err := os.Remove(sessions); err != nil {
		t.Fatal(err)
	}

	if out, err := asUser(t, agentUID, agentUID, nil, "mkdir "+sessions); err != nil {
		t.Fatalf("setup: %v: %s", err, out)
	}
	_, err := repo.Init(dir, repo.InitOptions{})
	if !errors.Is(err, repo.ErrForeignEntry) || !strings.Contains(err.Error(), fmt.Sprintf("belongs to uid %d, not the gate (uid %d)", agentUID, gateUID)) {
		t.Fatalf("err = %v, want ErrForeignEntry naming uid %d", err, agentUID)
	}
	if uid, _ := owner(t, sessions); uid != agentUID {
		t.Errorf("init adopted the agent's folder: owner %d", uid)
	}
	if err := os.Remove(sessions); err != nil {
		t.Fatal(err)
	}

	// A symlink to a file only root may change: init must not chmod it.
	victim := filepath.Join(testutil.TempDir(t), "victim")
	mustWrite(t, victim, "root's")
	mustChmod(t, victim, 0o600)
	if out, err := asUser(t, agentUID, agentUID, nil, "ln -s "+victim+" "+sessions); err != nil {
		t.Fatalf("setup: %v: %s", err, out)
	}
	_, err = repo.Init(dir, repo.InitOptions{})
	if err == nil || !strings.Contains(err.Error(), sessions+": expected a folder, found a symbolic link") {
		t.Fatalf("err = %v, want a refusal naming the symlink", err)
	}
	assertMode(t, victim, 0o600)
	if uid, _ := owner(t, victim); uid != 0 {
		t.Errorf("victim now owned by %d", uid)
	}
}

// TestInitAsUnprivilegedCannotGiveAway: without CAP_CHOWN, init cannot hand a
// vault to another uid and says why.
func TestInitAsUnprivilegedCannotGiveAway(t *testing.T) {
	testutil.RequireRoot(t)
	if os.Getenv("FEDMEM_REPO_CHILD") == "1" {
		t.Skip("child")
	}
	// Run this test binary as an unprivileged uid, calling Init directly.
	dir := filepath.Join(testutil.TempDir(t), "v")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary lives in a root-only temp dir; copy it where uid 64001 can run it.
	bin := filepath.Join(testutil.TempDir(t), "repo.test")
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	mustChmod(t, filepath.Dir(dir), 0o777)
	cmd := exec.Command("setpriv", "--reuid", fmt.Sprint(agentUID), "--regid", fmt.Sprint(agentUID), "--clear-groups", "--",
		bin, "-test.run", "^TestChildInitGiveAway$", "-test.v")
	cmd.Env = append(os.Environ(), "FEDMEM_REPO_CHILD=1", "FEDMEM_CHILD_DIR="+dir, "HOME=/nonexistent")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestChildInitGiveAway") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// TestChildInitGiveAway runs only as the child of the test above.
func TestChildInitGiveAway(t *testing.T) {
	if os.Getenv("FEDMEM_REPO_CHILD") != "1" {
		t.Skip("runs as the unprivileged child of TestInitAsUnprivilegedCannotGiveAway")
	}
	if os.Getuid() != agentUID {
		t.Fatalf("child runs as uid %d", os.Getuid())
	}
	gate := vault.Owner{UID: gateUID, GID: gateUID}
	_, err := repo.Init(os.Getenv("FEDMEM_CHILD_DIR"), repo.InitOptions{Gate: &gate})
	if err == nil || !errors.Is(err, syscall.EPERM) || !strings.Contains(err.Error(), "run as root") {
		t.Fatalf("err = %v, want EPERM with advice to run as root", err)
	}
	t.Log(err)
	// The caller may make a vault for itself.
	own := filepath.Join(os.Getenv("FEDMEM_CHILD_DIR"), "..", "own")
	res, err := repo.Init(own, repo.InitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Gate.UID != agentUID {
		t.Errorf("gate uid %d", res.Gate.UID)
	}
	checkGit(t, own)
}
