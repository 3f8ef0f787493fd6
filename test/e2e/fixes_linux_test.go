package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fedmem/fedmem/test/testutil"
)

// shadow runs one of useradd, groupadd, usermod (another test may hold
// /etc/passwd's lock: exit 10, "cannot lock", is retried).
func shadow(t *testing.T, name string, args ...string) {
	t.Helper()
	for i := 0; ; i++ {
		out, err := exec.Command(name, args...).CombinedOutput()
		if err == nil {
			return
		}
		if i < 50 && strings.Contains(string(out), "lock") {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// tempAccounts makes groups and users with names unique to this run and
// removes them when t ends.
type tempAccounts struct {
	t      *testing.T
	sfx    string
	users  []string
	groups []string
}

func newAccounts(t *testing.T) *tempAccounts {
	for _, tool := range []string{"useradd", "groupadd", "usermod", "userdel", "groupdel"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("FEDMEM_REQUIRE_ROOT") == "1" {
				t.Fatalf("%s (passwd) is needed", tool)
			}
			t.Skipf("%s not installed", tool)
		}
	}
	var b [3]byte
	rand.Read(b[:])
	a := &tempAccounts{t: t, sfx: hex.EncodeToString(b[:])}
	t.Cleanup(func() {
		for _, u := range a.users {
			exec.Command("userdel", u).Run()
		}
		for _, g := range a.groups {
			exec.Command("groupdel", g).Run()
		}
	})
	return a
}

func (a *tempAccounts) group(role string) string {
	n := "fmt" + role + a.sfx
	shadow(a.t, "groupadd", n)
	a.groups = append(a.groups, n)
	return n
}

// user makes a user with its own group and home (mode 0700, its own) and
// the given supplementary groups.
func (a *tempAccounts) user(role, home string, groups ...string) string {
	n := "fmt" + role + a.sfx
	args := []string{"--user-group", "--create-home", "--home-dir", home, "--shell", "/bin/sh"}
	if len(groups) > 0 {
		args = append(args, "--groups", strings.Join(groups, ","))
	}
	shadow(a.t, "useradd", append(args, n)...)
	a.users = append(a.users, n)
	a.groups = append(a.groups, n)
	return n
}

func gidOf(t *testing.T, group string) string {
	g, err := user.LookupGroup(group)
	if err != nil {
		t.Fatal(err)
	}
	return g.Gid
}

// TestTwoUserFixesWork (issue 23, item 2): the two-user layout set up from
// root by names, as the quickstart does, and every fix fedmem-run's refusal
// and `fedmem doctor` suggest, applied as written, makes the run succeed.
// Before: the default agent (uid 65533) was refused and told to join a
// group it cannot join (it has no account); now it runs with the vault's
// agent group; `--agent-user alice` (a member) dropped that very group and was
// refused; `--agent-user alice:agents` was "gid must be numeric"; and
// `--agent-user UID:GID` failed with "open_tree …/.local/share/fedmem/
// default/.cache: permission denied" on the state folders fedmem-run made
// in alice's 0700 home (her own group was not mapped for the init).
func TestTwoUserFixesWork(t *testing.T) {
	testutil.RequireRoot(t)
	bins := testutil.Binaries(t)
	base := testutil.TempDir(t)
	acc := newAccounts(t)
	agents := acc.group("ag")
	extra := acc.group("xg")
	gate := acc.user("gt", filepath.Join(base, "home-gate"), agents)
	member := acc.user("mb", filepath.Join(base, "home-member"), agents, extra)
	other := acc.user("nm", filepath.Join(base, "home-other"))
	v := filepath.Join(base, "vault")
	if out, err := testutil.InitCommand(t, bins.Fedmem, v, "--gate-user", gate, "--agent-group", agents).CombinedOutput(); err != nil {
		t.Fatalf("fedmem init by names: %v\n%s", err, out)
	}
	work := filepath.Join(base, "work")
	must(t, os.MkdirAll(work, 0o755))
	rootHome := filepath.Join(base, "home-root")
	must(t, os.MkdirAll(rootHome, 0o700))
	// The agent: its groups, then a draft in its inbox.
	script := `echo "GROUPS=$(id -G)"; printf -- '---\ntype: Fact\ntitle: t\n---\nx\n' > "$FEDMEM_INBOX/n.md.tmp" && mv "$FEDMEM_INBOX/n.md.tmp" "$FEDMEM_INBOX/n.md" && echo WROTE`
	run := func(flags ...string) (int, string, string) {
		t.Helper()
		args := append([]string{"--vault", v, "--workdir", work}, flags...)
		args = append(args, testutil.BackendArgs()...)
		cmd := exec.Command(bins.FedmemRun, append(args, "--", "sh", "-c", script)...)
		cmd.Dir = work
		cmd.Env = []string{"PATH=/usr/bin:/bin:/usr/sbin:/sbin", "HOME=" + rootHome, "LANG=C"}
		var so, se strings.Builder
		cmd.Stdout, cmd.Stderr = &so, &se
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, so.String(), se.String()
	}
	ok := func(what string, wantGroups []string, flags ...string) {
		t.Helper()
		code, out, errOut := run(flags...)
		if code != 0 || !strings.Contains(out, "WROTE") {
			t.Errorf("%s: exit %d, want 0 and a draft written\nstdout:\n%s\nstderr:\n%s", what, code, out, errOut)
			return
		}
		m := regexp.MustCompile(`GROUPS=(.*)`).FindStringSubmatch(out)
		got := strings.Fields(m[1])
		slices.Sort(got)
		slices.Sort(wantGroups)
		if !slices.Equal(got, wantGroups) {
			t.Errorf("%s: the agent's groups are %v, want %v (the vault's agent group, nothing else of its user's)", what, got, wantGroups)
		}
	}
	refused := func(what string, flags ...string) string {
		t.Helper()
		code, out, errOut := run(flags...)
		if code != 125 {
			t.Fatalf("%s: exit %d, want 125 (refused)\nstdout:\n%s\nstderr:\n%s", what, code, out, errOut)
		}
		for _, name := range []string{agents, gate} {
			if !strings.Contains(errOut, name) {
				t.Errorf("%s: the refusal does not name %s beside its id:\n%s", what, name, errOut)
			}
		}
		return errOut
	}
	agentsGid := gidOf(t, agents)
	fixRe := regexp.MustCompile(`fedmem-run (--agent-user [^\s,;)]+)`)

	// 1. Root's default agent (uid 65533, no account, or a fedmem-agent account
	// in none of the vault's groups, as CI machines have had)
	// runs with the vault's agent group as its gid.
	ok("the default agent", []string{agentsGid})
	if doc, _ := exec.Command(bins.Fedmem, "doctor", "--vault", v).CombinedOutput(); !regexp.MustCompile(`(?m)^inbox\s+OK`).Match(doc) {
		t.Errorf("fedmem doctor --vault fails the inbox for the default agent, which fedmem-run runs:\n%s", doc)
	}
	// An agent uid without an account: refused, and the fix fedmem-run
	// names works as written; doctor, asked about it, gives the same fix.
	free := ""
	for n := 64900; n < 65000; n++ {
		if _, err := user.LookupId(strconv.Itoa(n)); err != nil {
			free = strconv.Itoa(n)
			break
		}
	}
	msg := refused("--agent-user "+free, "--agent-user", free)
	fix := fixRe.FindStringSubmatch(msg)
	if fix == nil {
		t.Fatalf("the refusal suggests no fedmem-run --agent-user form:\n%s", msg)
	}
	ok("the refusal's fix "+fix[1], []string{agentsGid}, strings.Fields(fix[1])...)
	doc, _ := exec.Command(bins.Fedmem, "doctor", "--vault", v, "--agent-user", free).CombinedOutput()
	inboxAt := regexp.MustCompile(`(?m)^inbox\s`).FindIndex(doc)
	if inboxAt == nil {
		t.Fatalf("fedmem doctor --vault has no inbox check:\n%s", doc)
	}
	dfix := fixRe.FindStringSubmatch(string(doc[inboxAt[0]:])) // the inbox check's own fix
	if !regexp.MustCompile(`(?m)^inbox\s+FAIL`).Match(doc) || dfix == nil || dfix[1] != fix[1] {
		t.Fatalf("fedmem doctor --agent-user %s does not fail the inbox with fedmem-run's fix %q:\n%s", free, fix[1], doc)
	}
	doc2, err := exec.Command(bins.Fedmem, "doctor", "--vault", v, "--agent-user", strings.TrimPrefix(dfix[1], "--agent-user ")).CombinedOutput()
	if !regexp.MustCompile(`(?m)^inbox\s+OK`).Match(doc2) {
		t.Errorf("doctor --agent-user with its own fix does not pass the inbox (%v):\n%s", err, doc2)
	}

	// 2. A member by name keeps the vault's group (and only it).
	u, _ := user.Lookup(member)
	ok("--agent-user "+member, []string{u.Gid, agentsGid}, "--agent-user", member)
	// 3. USER:GROUP by names, and UID:GID by numbers: the agent's state
	// folders in the member's 0700 home work.
	ok("--agent-user "+member+":"+agents, []string{agentsGid}, "--agent-user", member+":"+agents)
	ok("--agent-user "+u.Uid+":"+agentsGid, []string{agentsGid}, "--agent-user", u.Uid+":"+agentsGid)
	for _, rel := range []string{".local/share/fedmem/default/.cache", ".cache", "go/pkg/mod"} {
		fi, err := os.Stat(filepath.Join(base, "home-member", rel))
		if err != nil {
			t.Errorf("no per-profile state %s in the member's home: %v", rel, err)
		} else if st := fi.Sys().(*syscall.Stat_t); strconv.Itoa(int(st.Uid)) != u.Uid {
			t.Errorf("%s in the member's home is uid %d's, want the member's (%s)", rel, st.Uid, u.Uid)
		}
	}
	// 4. A user who is not a member: refused; the usermod the refusal
	// names, run as written, makes the same command succeed.
	msg = refused("--agent-user "+other, "--agent-user", other)
	um := regexp.MustCompile(`usermod -aG (\S+) ([^\s;,)]+)`).FindStringSubmatch(msg)
	if um == nil || um[1] != agents || um[2] != other {
		t.Fatalf("the refusal for %s does not suggest usermod -aG %s %s:\n%s", other, agents, other, msg)
	}
	shadow(t, "usermod", "-aG", um[1], um[2])
	o, _ := user.Lookup(other)
	ok("--agent-user "+other+" after "+um[0], []string{o.Gid, agentsGid}, "--agent-user", other)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestGateUserOnlyVaultCollects: the README's `fedmem init VAULT
// --gate-user U` without --agent-group gives an everyone's inbox (01777,
// the gate user's). Before, a root caller's session folder was the agent's
// with root's group (mode 2770) and `fedmem gate once`, as U, failed with
// "session …: permission denied" while doctor called the inbox OK. Now the
// folder takes the inbox's group and the gate decides the draft. An
// unprivileged caller outside U's group gets a doctor FAIL naming the fix,
// and the gate's error for its folder names whose it is and the fix.
func TestGateUserOnlyVaultCollects(t *testing.T) {
	testutil.RequireRoot(t)
	bins := testutil.Binaries(t)
	base := testutil.TempDir(t)
	acc := newAccounts(t)
	gate := acc.user("go", filepath.Join(base, "home-gate"))
	alice := acc.user("al", filepath.Join(base, "home-alice"))
	v := filepath.Join(base, "vault")
	if out, err := testutil.InitCommand(t, bins.Fedmem, v, "--gate-user", gate).CombinedOutput(); err != nil {
		t.Fatalf("fedmem init --gate-user: %v\n%s", err, out)
	}
	work := filepath.Join(base, "work")
	must(t, os.MkdirAll(work, 0o777))
	must(t, os.Chmod(work, 0o777))
	script := `printf -- '---\ntype: Fact\ntitle: t\n---\nx\n' > "$FEDMEM_INBOX/n.md.tmp" && mv "$FEDMEM_INBOX/n.md.tmp" "$FEDMEM_INBOX/n.md" && echo WROTE`
	runAgent := func(cmd *exec.Cmd, home string) {
		t.Helper()
		cmd.Dir = work
		cmd.Env = []string{"PATH=/usr/bin:/bin:/usr/sbin:/sbin", "HOME=" + home, "LANG=C"}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "WROTE") {
			t.Fatalf("fedmem-run: %v\n%s", err, out)
		}
	}
	gateOnce := func() (string, error) {
		cmd := exec.Command("setpriv", "--reuid", gate, "--regid", gate, "--init-groups", "--", bins.Fedmem, "gate", "once", "--vault", v)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	args := append([]string{"--vault", v, "--workdir", work}, testutil.BackendArgs()...)
	rootHome := filepath.Join(base, "home-root")
	must(t, os.MkdirAll(rootHome, 0o700))
	runAgent(exec.Command(bins.FedmemRun, append(args, "--", "sh", "-c", script)...), rootHome)
	out, err := gateOnce()
	if err != nil || !strings.Contains(out, "1 pending") {
		t.Fatalf("gate once as %s after a root caller's session: %v, want the draft decided (1 pending):\n%s", gate, err, out)
	}

	// alice, unprivileged and outside the gate user's group.
	aliceHome := filepath.Join(base, "home-alice")
	doc, _ := exec.Command("setpriv", "--reuid", alice, "--regid", alice, "--init-groups", "--", bins.Fedmem, "doctor", "--vault", v).CombinedOutput()
	if !regexp.MustCompile(`(?m)^inbox\s+FAIL.*not in it: the gate cannot collect`).Match(doc) || !strings.Contains(string(doc), "--agent-group GROUP") {
		t.Errorf("doctor --vault as %s (not in %s's group) does not FAIL the inbox with the agent-group fix:\n%s", alice, gate, doc)
	}
	// An unprivileged caller runs the namespace backend only (the container
	// backends refuse it): no FEDMEM_BACKEND flags here.
	userArgs := []string{"--vault", v, "--workdir", work}
	runAgent(exec.Command("setpriv", append([]string{"--reuid", alice, "--regid", alice, "--init-groups", "--", bins.FedmemRun}, append(userArgs, "--", "sh", "-c", script)...)...), aliceHome)
	out, err = gateOnce()
	if err == nil || !strings.Contains(out, "permission denied (folder owner "+alice) || !strings.Contains(out, "--agent-group GROUP") {
		t.Errorf("gate once on %s's folder: %v, want permission denied naming the folder's owner and the fix:\n%s", alice, err, out)
	}
}
