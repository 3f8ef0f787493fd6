package escape

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/test/testutil"
	"github.com/fedmem/fedmem/vault"
)

func TestMain(m *testing.M) { os.Exit(testutil.Main(m)) }

const (
	gateUID  = 64000 // owns the vault in the gate-owned layouts
	agentUID = 64001 // runs fedmem-run in the unprivileged layouts
)

// Fake secrets planted in the test HOME; none may appear in any output.
var secrets = map[string]string{
	".ssh/id_ed25519":                  "-----BEGIN OPENSSH PRIVATE KEY----- FAKE-SSH-KEY-7f3a",
	".ssh/id_rsa":                      "-----BEGIN RSA PRIVATE KEY----- FAKE-RSA-KEY-91bc",
	".aws/credentials":                 "[default]\naws_secret_access_key = FAKE-AWS-SECRET-5d2e\n",
	".netrc":                           "machine example.com login me password FAKE-NETRC-PASS-11aa\n",
	".kube/config":                     "token: FAKE-KUBE-TOKEN-2b2b\n",
	".docker/config.json":              `{"auths":{"x":{"auth":"FAKE-DOCKER-AUTH-3c3c"}}}`,
	".config/gcloud/credentials.db":    "FAKE-GCLOUD-CRED-4d4d",
	".gnupg/private-keys-v1.d/key.key": "FAKE-GPG-KEY-5e5e",
}

// layout is one arrangement of vault, workdir and users.
type layout struct {
	name string
	// vaultInWorkdir puts the vault inside the writable workdir.
	vaultInWorkdir bool
	// workdirInVault makes the workdir a folder of the vault (it must
	// stay read-only).
	workdirInVault bool
	// gateOwned gives the vault to gateUID.
	gateOwned bool
	// user runs fedmem-run as agentUID through setpriv.
	user bool
	// agentOwned gives the vault to agentUID: no gate user, so file
	// permissions allow every write and only the sandbox stops them.
	agentOwned bool
}

var layouts = []layout{
	{name: "beside/root"},
	{name: "inside/root", vaultInWorkdir: true},
	{name: "gate-owned/root", gateOwned: true},
	{name: "workdir-in-vault/root", workdirInVault: true},
	{name: "beside/user", gateOwned: true, user: true},
	{name: "inside/user", gateOwned: true, user: true, vaultInWorkdir: true},
	{name: "own-vault/user", user: true, agentOwned: true},
}

// env is one prepared layout.
type env struct {
	l       layout
	bins    testutil.Bins
	base    string
	vault   *testutil.Vault
	workdir string
	home    string
	outDir  string // writable by the launching user: reports
	head    string
	// path, when set, is the caller's PATH instead of the system's.
	path string
}

func setup(t *testing.T, l layout) *env {
	t.Helper()
	if l.user {
		testutil.SkipUnprivilegedCaller(t)
	}
	return prepare(t, l)
}

// prepare is setup without the backend's caller check: for tests of the
// container backends' refusal of an unprivileged caller.
func prepare(t *testing.T, l layout) *env {
	t.Helper()
	testutil.RequireRoot(t)
	e := &env{l: l, bins: testutil.Binaries(t), base: testutil.TempDir(t)}
	if l.user {
		requireUserNS(t)
	}
	e.home = filepath.Join(e.base, "home")
	e.outDir = filepath.Join(e.base, "out")
	for _, d := range []string{e.home, e.outDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for rel, content := range secrets {
		p := filepath.Join(e.home, rel)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(e.home, ".bashrc"), []byte("# user's bashrc\n"), 0o644)
	vdir := filepath.Join(e.base, "vault")
	e.workdir = filepath.Join(e.base, "work")
	if l.vaultInWorkdir {
		vdir = filepath.Join(e.workdir, "vault")
	}
	if err := os.MkdirAll(e.workdir, 0o755); err != nil {
		t.Fatal(err)
	}
	o := testutil.VaultOptions{Fedmem: e.bins.Fedmem}
	if l.gateOwned {
		o.GateUID, o.GateGID = gateUID, gateUID
	}
	if l.agentOwned {
		o.GateUID, o.GateGID = agentUID, agentUID
	}
	e.vault = testutil.NewVault(t, vdir, o)
	if l.workdirInVault {
		e.workdir = filepath.Join(vdir, "10-projects")
	}
	if l.user {
		for _, d := range []string{e.home, e.outDir} {
			if err := testutil.ChownTree(d, agentUID, agentUID); err != nil {
				t.Fatal(err)
			}
		}
		if !l.workdirInVault {
			// Only the workdir itself: a vault inside it keeps its owner.
			if err := os.Chown(e.workdir, agentUID, agentUID); err != nil {
				t.Fatal(err)
			}
		}
	}
	head, err := testutil.Git(vdir, "rev-parse", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	e.head = strings.TrimSpace(head)
	t.Logf("layout %s: vault %s (made by %s), workdir %s, home %s", l.name, vdir, e.vault.InitBy, e.workdir, e.home)
	return e
}

// requireUserNS skips when the kernel does not let unprivileged users
// create user namespaces (fedmem-run cannot work for them there).
func requireUserNS(t *testing.T) {
	t.Helper()
	if b, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(b)) == "0" {
		t.Skip("kernel.unprivileged_userns_clone=0: unprivileged users cannot create user namespaces here")
	}
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) == "0" {
		t.Skip("user.max_user_namespaces=0")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv (util-linux) not installed")
	}
}

// command builds the fedmem-run command line for argv, as the layout's user.
func (e *env) command(ctx context.Context, report string, extra []string, argv ...string) *exec.Cmd {
	args := []string{"--vault", e.vault.Dir, "--workdir", e.workdir}
	if report != "" {
		args = append(args, "--report", report)
	}
	args = append(args, extra...)
	args = append(args, testutil.BackendArgs()...) // the matrix: FEDMEM_BACKEND (setup skips user layouts under container backends)
	args = append(append(args, "--"), argv...)
	// Never exec fedmem-run from this process itself: Go starts a program
	// by vfork, and while the vfork's child waits in its exec for a
	// fanotify permission answer (holdOpens marks fedmem-run) a garbage
	// collection's stop-the-world waits for the forking thread, which
	// waits for the child: the goroutine that answers never runs (CI hung
	// so, the child in fanotify_handle_event, the parent spinning).
	// env, or setpriv, execs it in the same process (the same pid).
	name := e.bins.FedmemRun
	if e.l.user {
		args = append([]string{"--reuid", strconv.Itoa(agentUID), "--regid", strconv.Itoa(agentUID), "--clear-groups", "--inh-caps=-all", "--", name}, args...)
		name = "setpriv"
	} else {
		args = append([]string{"--", name}, args...)
		name = "env"
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = e.workdir
	path := "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
	if e.path != "" {
		path = e.path
	}
	cmd.Env = []string{"PATH=" + path, "HOME=" + e.home, "LANG=C", "USER=agent"}
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// run is the outcome of one fedmem-run invocation.
type run struct {
	stdout, stderr []byte
	code           int
	results        []Result
	report         map[string]any
	session        string
}

func (e *env) run(t *testing.T, extra []string, argv ...string) *run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	report := filepath.Join(e.outDir, "report-"+strconv.FormatInt(time.Now().UnixNano(), 36)+".json")
	cmd := e.command(ctx, report, extra, argv...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	r := &run{stdout: so.Bytes(), stderr: se.Bytes(), code: exitCode(err)}
	if ctx.Err() != nil {
		t.Fatalf("fedmem-run timed out\nstderr:\n%s", se.Bytes())
	}
	if b, err := os.ReadFile(report); err == nil {
		if err := json.Unmarshal(b, &r.report); err != nil {
			t.Errorf("report %s: %v", report, err)
		}
		r.session, _ = r.report["session"].(string)
	}
	return r
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// hostileArgs runs the hostile program's given subcommand against e.
func (e *env) hostileArgs(sub string) []string {
	return []string{e.bins.Hostile, sub, "--other-session", e.vault.OtherSession, "--other-draft", e.vault.OtherDraft, "--home", e.home, "--note", e.vault.Note}
}

var sessionRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// TestHostileAgent runs every attack in every layout.
func TestHostileAgent(t *testing.T) {
	for _, l := range layouts {
		t.Run(l.name, func(t *testing.T) {
			e := setup(t, l)
			before, err := testutil.Take(e.vault.Dir)
			if err != nil {
				t.Fatal(err)
			}
			homeBefore, err := testutil.Take(e.home)
			if err != nil {
				t.Fatal(err)
			}
			os.Remove("/tmp/hostile-tmp.txt") // the hostile's /tmp file; must stay private
			binBefore, err := testutil.Take(filepath.Dir(e.bins.FedmemRun))
			if err != nil {
				t.Fatal(err)
			}

			// An abstract unix socket outside the sandbox, like X11's.
			abstract := fmt.Sprintf("fedmem-escape-%d-%d", os.Getpid(), time.Now().UnixNano())
			ln, err := net.Listen("unix", "@"+abstract)
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			var accepted atomic.Int32
			go func() {
				for {
					c, err := ln.Accept()
					if err != nil {
						return
					}
					accepted.Add(1)
					c.Close()
				}
			}()

			r := e.run(t, nil, append(e.hostileArgs("all"), "--abstract", abstract)...)
			t.Logf("fedmem-run exit %d, stderr:\n%s", r.code, r.stderr)
			if r.code != 0 {
				t.Errorf("fedmem-run exit %d, want 0 (the hostile program always exits 0)", r.code)
			}
			rs, err := parseResults(r.stdout)
			if err != nil {
				t.Fatal(err)
			}
			if len(rs) < 200 {
				t.Errorf("only %d result lines; the hostile program stopped early?\n%s", len(rs), r.stdout)
			}
			var failPositive map[string]map[string]bool
			if l.workdirInVault {
				failPositive = map[string]map[string]bool{"workdir-write": writeDenied, "workdir-rename-across-dirs": writeDenied}
			}
			ev := judge(rs, e.vault.OtherSession, failPositive)
			for _, line := range ev.table {
				t.Log(line)
			}
			for _, p := range ev.problems {
				t.Errorf("[%s] %s", l.name, p)
			}
			session := checkState(t, rs, e, r)

			// Guarantee 1: the vault outside the own inbox is unchanged.
			after, err := testutil.Take(e.vault.Dir)
			if err != nil {
				t.Fatal(err)
			}
			own := filepath.Join(vault.InboxDir, session)
			for _, d := range testutil.Diff(before, after, func(rel string) bool {
				return rel == vault.InboxDir || vault.Within(rel, own) || vault.Within(rel, vault.SessionsDir)
			}) {
				t.Errorf("[%s] vault changed: %s", l.name, d)
			}
			// The inbox folder itself may gain the session's directory (mtime,
			// size, nlink) but keeps its owner and mode.
			if b, a := before[vault.InboxDir], after[vault.InboxDir]; b.Mode != a.Mode || b.UID != a.UID || b.GID != a.GID || !equalXattrs(b.Xattrs, a.Xattrs) {
				t.Errorf("[%s] inbox folder metadata changed: %s -> %s", l.name, b, a)
			}
			if x, ok := after[filepath.Join(own, "x.md")]; !ok {
				t.Errorf("[%s] the draft x.md is not in %s on the host", l.name, own)
			} else if want := agentUIDOf(l, r); x.UID != uint32(want) {
				t.Errorf("[%s] the draft is owned by uid %d on the host, want the agent's uid %d", l.name, x.UID, want)
			}
			if n := accepted.Load(); n > 0 {
				t.Errorf("[%s] the agent connected %d time(s) to the abstract socket @%s outside the sandbox", l.name, n, abstract)
			}
			homeAfter, err := testutil.Take(e.home)
			if err != nil {
				t.Fatal(err)
			}
			// The launcher (not the agent) may add the profile's per-profile
			// state (ec14b22): its store under ~/.local/share/fedmem/ and
			// the mount points it binds at; nothing else in the home.
			allowState, stateProblems := launcherStateOnly(homeBefore, homeAfter, agentUIDOf(l, r))
			for _, p := range stateProblems {
				t.Errorf("[%s] home: %s", l.name, p)
			}
			for _, d := range testutil.Diff(homeBefore, homeAfter, allowState) {
				t.Errorf("[%s] home changed: %s", l.name, d)
			}
			binAfter, err := testutil.Take(filepath.Dir(e.bins.FedmemRun))
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range testutil.Diff(binBefore, binAfter, nil) {
				t.Errorf("[%s] fedmem binaries changed: %s", l.name, d)
			}
			if _, err := os.Stat("/tmp/hostile-tmp.txt"); err == nil {
				os.Remove("/tmp/hostile-tmp.txt")
				t.Errorf("[%s] the agent's /tmp file appeared in the host's /tmp: /tmp is not private", l.name)
			}
			if !l.workdirInVault {
				if _, err := os.Stat(filepath.Join(e.workdir, "hostile-wrote-here.txt")); err != nil {
					t.Errorf("[%s] the workdir write did not reach the host workdir: %v", l.name, err)
				}
			}
			// No secret, and no other session's draft, reached any output.
			all := string(r.stdout) + string(r.stderr)
			for rel, s := range secrets {
				if strings.Contains(all, s[len(s)-9:]) {
					t.Errorf("[%s] secret ~/%s leaked into the output", l.name, rel)
				}
			}
			if strings.Contains(all, "SECRET-OTHER-SESSION") {
				t.Errorf("[%s] another session's draft leaked into the output", l.name)
			}
		})
	}
}

// agentUIDOf is the host uid the agent ran as: never 0 (guarantee 5), so
// for a root caller the one the report's layers.identity names.
func agentUIDOf(l layout, r *run) int {
	if id, ok := r.report["layers"].(map[string]any)["identity"].(map[string]any); ok {
		if uid, ok := id["uid"].(float64); ok && uid != 0 {
			return int(uid)
		}
	}
	if l.user {
		return agentUID
	}
	return -1 // no identity reported: a root caller's agent must not be 0
}

func launcherUID(l layout) int {
	if l.user {
		return agentUID
	}
	return 0
}

// TestLayersActive: the report names every layer, and each one the kernel
// offers is on (Landlock where the kernel has it).
func TestLayersActive(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	r := e.run(t, nil, "/bin/true")
	if r.code != 0 {
		t.Fatalf("fedmem-run /bin/true: exit %d: %s", r.code, r.stderr)
	}
	layers, _ := r.report["layers"].(map[string]any)
	t.Logf("layers: %v", layers)
	for _, k := range []string{"no_new_privs", "seccomp", "mounts_verified"} {
		if layers[k] != true {
			t.Errorf("layer %s = %v, want true", k, layers[k])
		}
	}
	if layers["capabilities"] != "none" {
		t.Errorf("capabilities = %v, want none", layers["capabilities"])
	}
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		t.Logf("kernel has no Landlock (%v): layer not required", errno)
		return
	}
	if got, _ := layers["landlock_abi"].(float64); got < 1 || layers["landlock_fs"] != true {
		t.Errorf("kernel offers Landlock ABI %d but the sandbox reports landlock_abi=%v landlock_fs=%v", abi, layers["landlock_abi"], layers["landlock_fs"])
	}
}

func equalXattrs(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// checkState verifies the raw values behind the hostile program's state
// checks and the session report; it returns the session id.
func checkState(t *testing.T, rs []Result, e *env, r *run) string {
	t.Helper()
	name := e.l.name
	caps := map[string]bool{}
	for _, c := range find(rs, "capabilities") {
		caps[c.Target] = true
		if c.Saw != "0000000000000000" {
			t.Errorf("[%s] %s = %q, want all zero", name, c.Target, c.Saw)
		}
	}
	for _, c := range []string{"CapEff", "CapPrm", "CapBnd", "CapAmb", "CapInh"} {
		if !caps[c] {
			t.Errorf("[%s] no result for capability set %s", name, c)
		}
	}
	one := func(attempt, want string) {
		got := find(rs, attempt)
		if len(got) != 1 || got[0].Saw != want {
			t.Errorf("[%s] %s: got %+v, want saw=%q", name, attempt, got, want)
		}
	}
	one("no_new_privs", "1")
	one("seccomp", "2")
	for _, f := range find(rs, "open-fds") {
		for _, fd := range strings.Fields(f.Saw) {
			n, _, _ := strings.Cut(fd, "=")
			if n != "0" && n != "1" && n != "2" {
				t.Errorf("[%s] fd %s reached the agent (all: %s)", name, fd, f.Saw)
			}
		}
	}
	var session string
	for _, i := range find(rs, "info-env") {
		var m map[string]any
		json.Unmarshal([]byte(i.Saw), &m)
		session, _ = m["session"].(string)
		if !sessionRe.MatchString(session) {
			t.Errorf("[%s] FEDMEM_SESSION %q is not a session id", name, session)
		}
		if m["inbox"] != vault.InboxPath(e.vault.Dir, session) || m["vault"] != e.vault.Dir {
			t.Errorf("[%s] FEDMEM_VAULT/FEDMEM_INBOX wrong: %s", name, i.Saw)
		}
	}
	if session == "" {
		t.Fatalf("[%s] no session id from inside the sandbox", name)
	}
	one("list-inbox-root", session)
	if r.report == nil {
		t.Errorf("[%s] no --report written", name)
		return session
	}
	if r.session != session {
		t.Errorf("[%s] report session %q, agent saw %q", name, r.session, session)
	}
	for _, k := range []string{"vault_head_start", "vault_head_end"} {
		if r.report[k] != e.head {
			t.Errorf("[%s] report %s = %v, want %s", name, k, r.report[k], e.head)
		}
	}
	if c, _ := r.report["exit_code"].(float64); c != 0 {
		t.Errorf("[%s] report exit_code %v", name, r.report["exit_code"])
	}
	found := false
	files, _ := r.report["inbox_files"].([]any)
	for _, f := range files {
		if m, ok := f.(map[string]any); ok && m["path"] == "x.md" {
			found = true
		}
	}
	if !found {
		t.Errorf("[%s] report inbox_files lacks x.md: %v", name, r.report["inbox_files"])
	}
	t.Logf("[%s] layers: %v", name, r.report["layers"])
	return session
}

// stateStore is where fedmem-run keeps each profile's persistent state in
// the caller's home (sandbox/launch/state.go).
const stateStore = ".local/share/fedmem"

// launcherStateOnly sorts what a session added to the home: the only
// additions allowed are the directories fedmem-run makes for the profile's
// state (the store ~/.local/share/fedmem/<profile>/X and the mount point
// ~/X it binds there, with their parents), each an empty directory of the
// home's owner, mode 0700 — a mount point's folders 0711 when the agent is
// another uid, which must walk through them to the bind and lists
// nothing there — and the home's own mtime/nlink from them. Any
// file, link or other mode there is a problem: nothing the agent writes may
// land in the home. allow tells testutil.Diff which entries were checked.
func launcherStateOnly(before, after testutil.Snapshot, agentUID int) (allow func(rel string) bool, problems []string) {
	owner := before["."].UID
	mirrored := map[string]bool{}
	for rel := range after {
		if _, old := before[rel]; old || !vault.Within(rel, stateStore) {
			continue
		}
		parts := strings.Split(rel, "/")
		// .local/share/fedmem/<profile>/X...: X and its parents are mount points.
		for i := 5; i <= len(parts); i++ {
			mirrored[strings.Join(parts[4:i], "/")] = true
		}
	}
	added := map[string]bool{}
	for rel, a := range after {
		if _, old := before[rel]; old {
			continue
		}
		if !(mirrored[rel] || rel == ".local" || rel == ".local/share" || vault.Within(rel, stateStore)) {
			continue // testutil.Diff reports it
		}
		added[rel] = true
		want := os.FileMode(0o700)
		if mirrored[rel] && !vault.Within(rel, stateStore) && rel != ".local" && rel != ".local/share" && agentUID != int(owner) {
			want = 0o711
		}
		if !a.Mode.IsDir() || a.Mode.Perm() != want || a.UID != owner {
			problems = append(problems, fmt.Sprintf("state path %s: %s, want an empty directory of uid %d, mode %04o", rel, a, owner, want))
		}
	}
	if b, a := before["."], after["."]; b.Mode != a.Mode || b.UID != a.UID || b.GID != a.GID {
		problems = append(problems, fmt.Sprintf("the home's own metadata changed: %s -> %s", b, a))
	}
	return func(rel string) bool { return rel == "." || added[rel] }, problems
}
