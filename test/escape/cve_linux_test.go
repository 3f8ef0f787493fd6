package escape

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fedmem/fedmem/test/testutil"
	"github.com/fedmem/fedmem/vault"
)

// hostileIn runs `hostile all` in a fresh beside/root layout and judges it.
func hostileIn(t *testing.T) (*env, *run, []Result) {
	t.Helper()
	e := setup(t, layout{name: "beside/root"})
	r := e.run(t, nil, e.hostileArgs("all")...)
	rs, err := parseResults(r.stdout)
	if err != nil {
		t.Fatal(err)
	}
	if len(find(rs, "done")) != 1 {
		t.Fatalf("hostile did not finish (exit %d):\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	return e, r, rs
}

// assertRefused checks every result of attempt against want, and that there
// is at least one.
func assertRefused(t *testing.T, rs []Result, attempt string, want map[string]bool) {
	t.Helper()
	got := find(rs, attempt)
	if len(got) == 0 {
		t.Errorf("no %s attempt in the output", attempt)
	}
	for _, r := range got {
		if r.OK || !want[r.Errno] {
			t.Errorf("%s on %s: ok=%v errno=%s (%s), want refused with one of %v", attempt, r.Target, r.OK, r.Errno, r.Err, keys(want))
		} else {
			t.Logf("%s on %s refused: %s", attempt, r.Target, r.Errno)
		}
	}
}

// TestCVE2019_5736_ProcSelfExe re-tries the runc binary overwrite: the
// agent opens the sandbox init's binary (/proc/1/exe, fedmem-run itself)
// for writing, directly and through an O_PATH fd reopened later. ETXTBSY
// would mean the host binary's inode was reachable through a writable mount
// and only the running exec saved it, so it is not accepted.
func TestCVE2019_5736_ProcSelfExe(t *testing.T) {
	e, _, rs := hostileIn(t)
	before, err := testutil.Take(filepath.Dir(e.bins.FedmemRun))
	if err != nil {
		t.Fatal(err)
	}
	assertRefused(t, rs, "proc-exe-open-write", procDenied)
	assertRefused(t, rs, "proc-exe-opath-reopen-write", procDenied)
	after, err := testutil.Take(filepath.Dir(e.bins.FedmemRun))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range testutil.Diff(before, after, nil) {
		t.Errorf("fedmem binaries changed: %s", d)
	}
}

// TestCVE2016_9962_InitNotReachable: runc's init could be ptraced from the
// container before it dropped privileges. The sandbox's pid 1 must be out
// of reach: no ptrace, no /proc/1/mem, no process_vm_*, no signals.
func TestCVE2016_9962_InitNotReachable(t *testing.T) {
	_, _, rs := hostileIn(t)
	assertRefused(t, rs, "ptrace-attach", expected["ptrace-attach"])
	assertRefused(t, rs, "proc-mem-open-rdwr", procDenied)
	assertRefused(t, rs, "process_vm_writev", syscallOff)
	assertRefused(t, rs, "process_vm_readv", syscallOff)
	assertRefused(t, rs, "proc-root-write-note", procDenied)
	assertRefused(t, rs, "kill", expected["kill"])
}

// TestShocker_OpenByHandleAt re-tries the 2014 Docker "shocker" escape:
// open_by_handle_at with a handle to the filesystem root reaches files
// outside every mount. It must be refused whatever the handle.
func TestShocker_OpenByHandleAt(t *testing.T) {
	_, _, rs := hostileIn(t)
	assertRefused(t, rs, "open_by_handle_at", syscallOff)
}

// TestNestedUserNamespaceEscape: with a new user namespace the agent would
// hold every capability over a new mount namespace and could remount,
// unmount or pivot away from the read-only vault (the route of many
// container escapes, e.g. CVE-2022-0185 through fsconfig). Every way to get
// one is refused, and clone3, whose flags seccomp cannot read, answers
// ENOSYS (or EPERM).
func TestNestedUserNamespaceEscape(t *testing.T) {
	_, _, rs := hostileIn(t)
	assertRefused(t, rs, "clone-newuser", expected["clone-newuser"])
	assertRefused(t, rs, "unshare-newuser", expected["unshare-newuser"])
	assertRefused(t, rs, "unshare-newns", syscallOff)
	assertRefused(t, rs, "clone3-reachable", expected["clone3-reachable"])
	assertRefused(t, rs, "setns", expected["setns"])
	if n := find(rs, "nested-started"); len(n) > 0 {
		t.Errorf("a nested namespace child ran: %+v", n)
	}
	for _, a := range []string{"fsopen", "fspick", "open_tree-clone", "move_mount-vault", "mount_setattr-clear-rdonly", "umount-vault", "remount-bind-rw", "pivot_root"} {
		assertRefused(t, rs, a, syscallOff)
	}
}

// TestCVE2024_21626_LeakedFd re-tries runc's "Leaky Vessels": a file
// descriptor the launcher inherited (here a writable fd on a vault note,
// opened without CLOEXEC by the shell that starts fedmem-run) must not reach
// the agent, or it could write the vault through it.
func TestCVE2024_21626_LeakedFd(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	note := filepath.Join(e.vault.Dir, e.vault.Note)
	before, err := testutil.Take(e.vault.Dir)
	if err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`exec 7>>%q; exec 8<%q; exec 9<%q; exec "$@"`, note, filepath.Join(e.vault.Dir, ".git"), e.vault.Dir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	args := append([]string{"-c", script, "bash", e.bins.FedmemRun, "--vault", e.vault.Dir, "--workdir", e.workdir, "--"}, e.hostileArgs("fds")...)
	cmd := exec.CommandContext(ctx, "bash", args...)
	cmd.Dir = e.workdir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + e.home}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("fedmem-run: %v\n%s", err, out)
	}
	rs, err := parseResults(out)
	if err != nil {
		t.Fatal(err)
	}
	fds := find(rs, "open-fds")
	if len(fds) != 1 {
		t.Fatalf("no fd census in %s", out)
	}
	t.Logf("fds inside: %s", fds[0].Saw)
	for _, fd := range strings.Fields(fds[0].Saw) {
		n, target, _ := strings.Cut(fd, "=")
		if n != "0" && n != "1" && n != "2" {
			t.Errorf("fd %s (%s) reached the agent", n, target)
		}
		if strings.HasPrefix(target, e.vault.Dir) {
			t.Errorf("a vault fd reached the agent: %s", fd)
		}
	}
	after, err := testutil.Take(e.vault.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range testutil.Diff(before, after, func(rel string) bool {
		return vault.Within(rel, vault.InboxDir)
	}) {
		t.Errorf("vault changed: %s", d)
	}
}

// TestExitCodes: the agent's status passes through; fedmem's own failures
// have fixed codes.
func TestExitCodes(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	noexec := filepath.Join(e.workdir, "noexec.sh")
	if err := os.WriteFile(noexec, []byte("#!/bin/sh\nexit 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badProfile := filepath.Join(e.workdir, "bad-profile.yaml")
	if err := os.WriteFile(badProfile, []byte("name: bad\nnetwork: [unclosed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		extra  []string
		argv   []string
		want   int
		stderr string // must appear in stderr
	}{
		{"agent exit 3", nil, []string{"/bin/sh", "-c", "exit 3"}, 3, ""},
		{"hostile exit 42", nil, []string{e.bins.Hostile, "exit", "42"}, 42, ""},
		{"not found", nil, []string{"/nonexistent/agent"}, 127, ""},
		{"not executable", nil, []string{noexec}, 126, ""},
		{"SIGTERM", nil, []string{"/bin/sh", "-c", "kill -TERM $$"}, 143, ""},
		{"SIGKILL", nil, []string{"/bin/sh", "-c", "kill -KILL $$"}, 137, ""},
		{"bad profile file", []string{"--profile", badProfile}, []string{"/bin/true"}, 125, "bad-profile.yaml"},
		{"unknown profile", []string{"--profile", "no-such-profile"}, []string{"/bin/true"}, 125, "no-such-profile"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.run(t, c.extra, c.argv...)
			if r.code != c.want {
				t.Errorf("exit %d, want %d\nstderr: %s", r.code, c.want, r.stderr)
			}
			if c.stderr != "" && !strings.Contains(string(r.stderr), c.stderr) {
				t.Errorf("stderr does not name %q: %s", c.stderr, r.stderr)
			}
		})
	}
	t.Run("missing vault", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, e.bins.FedmemRun, "--vault", filepath.Join(e.base, "no-vault"), "--", "/bin/true")
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + e.home}
		out, err := cmd.CombinedOutput()
		if c := exitCode(err); c != 125 {
			t.Errorf("exit %d, want 125: %s", c, out)
		}
		if !strings.Contains(string(out), "no-vault") {
			t.Errorf("message does not name the vault: %s", out)
		}
	})
}

// TestMaskedSecrets: an ordinary program (cat) cannot read a planted key.
func TestMaskedSecrets(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	for rel, content := range secrets {
		r := e.run(t, nil, "/bin/sh", "-c", "cat \"$HOME/"+rel+"\"; ls -la \"$(dirname \"$HOME/"+rel+"\")\"")
		out := string(r.stdout) + string(r.stderr)
		if strings.Contains(out, content[len(content)-9:]) {
			t.Errorf("~/%s readable inside the sandbox:\n%s", rel, out)
		}
		t.Logf("~/%s: %s", rel, strings.TrimSpace(out))
	}
}

// TestOtherSessionsInvisible: listing the inbox shows only the own session,
// and another session's draft cannot be opened by path.
func TestOtherSessionsInvisible(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	draft := filepath.Join(e.vault.OtherSession, e.vault.OtherDraft)
	r := e.run(t, nil, "/bin/sh", "-c", `ls -A "$FEDMEM_VAULT/90-inbox"; echo "SESSION=$FEDMEM_SESSION"; cat `+strconv.Quote(draft)+`; echo "cat=$?"`)
	out := string(r.stdout)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 3 {
		t.Fatalf("unexpected output:\n%s\n%s", out, r.stderr)
	}
	listing, session := lines[0], strings.TrimPrefix(lines[1], "SESSION=")
	if listing != session || !sessionRe.MatchString(session) {
		t.Errorf("inbox listing %q, want only the own session %q", listing, session)
	}
	if strings.Contains(out, "SECRET-OTHER-SESSION") || lines[len(lines)-1] == "cat=0" {
		t.Errorf("another session's draft was readable:\n%s", out)
	}
}

// TestControlUnsandboxed proves the suite can fail: the same file attacks
// run without fedmem-run (as root, on a scratch vault) succeed, and both
// judge and Diff report them. If this test fails, the escape tests above
// prove nothing.
func TestControlUnsandboxed(t *testing.T) {
	testutil.RequireRoot(t)
	bins := testutil.Binaries(t)
	base := testutil.TempDir(t)
	v := testutil.NewVault(t, filepath.Join(base, "vault"), testutil.VaultOptions{})
	inbox := filepath.Join(v.Dir, vault.InboxDir, "control")
	if err := os.MkdirAll(inbox, 0o755); err != nil {
		t.Fatal(err)
	}
	// The whole base: the attacks may rename the vault root itself.
	before, err := testutil.Take(base)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bins.Hostile, "files", "--vault", v.Dir, "--inbox", inbox, "--workdir", base, "--note", v.Note)
	cmd.Dir = base
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hostile files: %v", err)
	}
	rs, err := parseResults(out)
	if err != nil {
		t.Fatal(err)
	}
	ev := judge(rs, "", nil)
	escapes := 0
	for _, p := range ev.problems {
		if strings.HasPrefix(p, "ESCAPE?") {
			escapes++
		}
	}
	if escapes < 20 {
		t.Errorf("without a sandbox only %d attacks were flagged; judge cannot see escapes:\n%s", escapes, strings.Join(ev.problems, "\n"))
	}
	after, err := testutil.Take(base)
	if err != nil {
		t.Fatal(err)
	}
	d := testutil.Diff(before, after, func(rel string) bool { return vault.Within(rel, filepath.Join("vault", vault.InboxDir, "control")) })
	if len(d) < 5 {
		t.Errorf("without a sandbox the snapshot diff saw only %d changes:\n%s", len(d), strings.Join(d, "\n"))
	}
	t.Logf("control: %d attacks flagged, %d vault changes seen", escapes, len(d))
}

// TestControlNestedEscape proves the nested-namespace attack code works, so
// that its silence inside the sandbox means something: run as root in a
// private mount namespace where the vault is bound read-only (no sandbox,
// full capabilities), nested-escape makes the vault writable and changes the
// note, and judge flags it.
func TestControlNestedEscape(t *testing.T) {
	testutil.RequireRoot(t)
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("unshare (util-linux) not installed")
	}
	bins := testutil.Binaries(t)
	base := testutil.TempDir(t)
	v := testutil.NewVault(t, filepath.Join(base, "vault"), testutil.VaultOptions{})
	inbox := filepath.Join(v.Dir, vault.InboxDir, "control")
	if err := os.MkdirAll(inbox, 0o755); err != nil {
		t.Fatal(err)
	}
	note := filepath.Join(v.Dir, v.Note)
	before, err := os.ReadFile(note)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll("/tmp/hostile-newroot") // the mount point nested-escape makes
	script := `mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && exec "$2" nested-escape --vault "$1" --inbox "$3" --workdir "$4" --note "$5"`
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", script, "sh", v.Dir, bins.Hostile, inbox, base, v.Note)
	cmd.Dir = base
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("control: %v\n%s", err, out)
	}
	rs, err := parseResults(out)
	if err != nil {
		t.Fatal(err)
	}
	ev := judge(rs, "", nil)
	flagged := 0
	for _, p := range ev.problems {
		if strings.HasPrefix(p, "nested-write") {
			flagged++
		}
	}
	after, _ := os.ReadFile(note)
	if flagged == 0 || string(after) == string(before) {
		t.Errorf("nested-escape with full capabilities did not write the read-only vault (flagged %d):\n%s", flagged, out)
	}
	t.Logf("control: %d nested writes flagged", flagged)
}
