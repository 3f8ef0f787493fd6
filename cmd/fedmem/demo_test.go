package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fedmem/fedmem/test/testutil"
	"github.com/fedmem/fedmem/vault"
)

// TestMain removes the binaries testutil.Binaries builds (every test of this
// package that runs fedmem-run shares them).
func TestMain(m *testing.M) { os.Exit(testutil.Main(m)) }

// TestDiffSnapshotsSeesChanges: the demo's own check of the vault notices
// each kind of change outside the session's inbox, and only there.
func TestDiffSnapshotsSeesChanges(t *testing.T) {
	v := t.TempDir()
	const session = "s-demo"
	for _, d := range []string{"00-global", "10-projects", ".git/refs/heads", vault.InboxDir + "/" + session, vault.InboxDir + "/other", vault.SessionsDir} {
		if err := os.MkdirAll(filepath.Join(v, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := []string{"00-global/AGENT.md", "00-global/RULES.md", "10-projects/a.md", "10-projects/b.md", ".git/config", vault.InboxDir + "/other/draft.md"}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(v, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before, err := snapshot(v)
	if err != nil {
		t.Fatal(err)
	}
	if d := diffSnapshots(before, before, session); len(d) != 0 {
		t.Fatalf("identical snapshots differ: %q", d)
	}
	old := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	steps := []func() error{
		func() error { return os.WriteFile(filepath.Join(v, "00-global/AGENT.md"), []byte("y\n"), 0o644) }, // same size, other content
		func() error { return os.Chmod(filepath.Join(v, "00-global/RULES.md"), 0o666) },
		func() error { return os.Chtimes(filepath.Join(v, "10-projects/a.md"), old, old) },
		func() error { return os.Remove(filepath.Join(v, "10-projects/b.md")) },
		func() error { return os.WriteFile(filepath.Join(v, ".git/refs/heads/planted"), nil, 0o644) },
		func() error { return os.Symlink("/etc/passwd", filepath.Join(v, "10-projects/link.md")) },
		func() error {
			return os.WriteFile(filepath.Join(v, vault.InboxDir, "other", "planted.md"), nil, 0o644)
		},
		// Allowed: the session's own inbox and the session records.
		func() error {
			return os.WriteFile(filepath.Join(v, vault.InboxDir, session, "draft.md"), []byte("d"), 0o644)
		},
		func() error { return os.WriteFile(filepath.Join(v, vault.SessionsDir, session+".json"), nil, 0o644) },
	}
	for i, s := range steps {
		if err := s(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	after, err := snapshot(v)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(diffSnapshots(before, after, session), "\n")
	for _, want := range []string{
		"00-global/AGENT.md: changed (content",
		"00-global/RULES.md: changed (mode -rw-r--r-- -> -rw-rw-rw-",
		"10-projects/a.md: changed (mtime)",
		"10-projects/b.md: removed",
		".git/refs/heads/planted: created",
		"10-projects/link.md: created",
		vault.InboxDir + "/other/planted.md: created",
		"10-projects: changed", // the folder's entries changed
	} {
		if !strings.Contains(got, want) {
			t.Errorf("diff misses %q; got:\n%s", want, got)
		}
	}
	for _, allowed := range []string{session + "/draft.md", ".sessions/"} {
		if strings.Contains(got, allowed) {
			t.Errorf("diff reports an allowed change %q; got:\n%s", allowed, got)
		}
	}
	// Without a session id nothing in the inbox is allowed.
	if d := strings.Join(diffSnapshots(before, after, ""), "\n"); !strings.Contains(d, session+"/draft.md: created") {
		t.Errorf("with no session, the draft is not reported:\n%s", d)
	}
}

func TestParseDemoOutput(t *testing.T) {
	out := "noise\nFEDMEM-DEMO\tblocked\tfailed\twrite x\tsh: 1: cannot create x: Read-only file system\n" +
		"FEDMEM-DEMO\tallowed\tok\tdraft\t/v/90-inbox/s/a.md\nFEDMEM-DEMO\tshort\n" +
		"FEDMEM-DEMO\tinfo\tok\twhoami\tuid=0 gid=0 session=2026-abc\n"
	got := parseDemoOutput([]byte(out))
	if len(got) != 3 {
		t.Fatalf("parsed %d results, want 3: %+v", len(got), got)
	}
	if got[0] != (demoResult{"blocked", "failed", "write x", "sh: 1: cannot create x: Read-only file system"}) {
		t.Errorf("first result %+v", got[0])
	}
	if s := sessionFromInfo(got[2:]); s != "2026-abc" {
		t.Errorf("session %q, want 2026-abc", s)
	}
}

// TestDemoInSandbox runs the whole demo against the real fedmem-run, as root,
// so in the two-user layout (a gate uid owns the vault, the inbox belongs to
// an agents' group): every attempt of the agent script must be blocked, the
// vault unchanged, the drafts in the inbox, and the gate — running as its own
// uid — must promote the good note and reject the hostile ones.
func TestDemoInSandbox(t *testing.T) {
	testutil.RequireRoot(t)
	bins := testutil.Binaries(t)
	var out bytes.Buffer
	err := runDemo(context.Background(), demoOptions{dir: testutil.TempDir(t), runBin: bins.FedmemRun, self: bins.Fedmem, timeout: 2 * time.Minute}, true, &out)
	t.Log("\n" + out.String())
	if err != nil {
		t.Fatalf("demo: %v", err)
	}
	checkDemoPassed(t, out.String())
	// Started by root, the agent never runs as uid 0: the demo names its
	// agent user (primary group = the agents' group), and the gate promotes
	// the good note from the trusted built-in profile while holding others.
	for _, want := range []string{"gate user uid 64290", "run as uid 64290 (groups 64291)", "whoami                       uid=64292 gid=64291", "origin: verified", "pending   "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("demo output misses %q (the two-user layout)", want)
		}
	}
}

// TestDemoAsUnprivilegedUser runs `fedmem demo` as uid 65534, the layout of
// an ordinary user on a machine that allows unprivileged user namespaces.
func TestDemoAsUnprivilegedUser(t *testing.T) {
	testutil.RequireRoot(t)
	bins := testutil.Binaries(t)
	dir := testutil.TempDir(t)
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	fedmem, fedmemRun := worldReadableCopies(t, bins)
	out, code := runDemoBinary(t, fedmem, dir, "--fedmem-run", fedmemRun)
	t.Log("\n" + out)
	if code != 0 {
		t.Fatalf("fedmem demo as uid 65534 exited %d", code)
	}
	checkDemoPassed(t, out)
	if !strings.Contains(out, "--allow-same-user") {
		t.Errorf("demo as an ordinary user should run the gate in same-user mode")
	}
}

// TestDemoCatchesAnEscape is the demo's positive control: with a launcher
// that does not sandbox at all (a shell script that sets the FEDMEM_*
// variables and execs the command), the demo must fail and name what got
// through. It runs as uid 65534 so the unsandboxed script can only harm the
// demo's own files.
func TestDemoCatchesAnEscape(t *testing.T) {
	testutil.RequireRoot(t)
	bins := testutil.Binaries(t)
	dir := testutil.TempDir(t)
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(testutil.TempDir(t), "no-sandbox-run")
	script := `#!/bin/sh
while [ $# -gt 0 ]; do case $1 in --vault) V=$2; shift 2;; --report) R=$2; shift 2;; --) shift; break;; *) shift;; esac; done
mkdir -p "$V/90-inbox/nosandbox"
echo '{"session":"nosandbox"}' > "$R"
FEDMEM_VAULT=$V FEDMEM_INBOX=$V/90-inbox/nosandbox FEDMEM_SESSION=nosandbox exec "$@"
`
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	fedmem, _ := worldReadableCopies(t, bins)
	out, code := runDemoBinary(t, fedmem, dir, "--fedmem-run", fake, "--no-gate")
	t.Log("\n" + out)
	if code == 0 {
		t.Fatalf("demo passed with a launcher that does not sandbox")
	}
	for _, want := range []string{
		"NOT BLOCKED  append to 00-global/AGENT.md",
		"NOT BLOCKED  append to .git/config",
		"NOT BLOCKED  read another session's draft",
		"git status     NOT CLEAN",
		"00-global/AGENT.md: changed",
		"home/.bashrc CHANGED",
		"demo failed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output misses %q", want)
		}
	}
}

// worldReadableCopies copies fedmem and fedmem-run into a scratch directory
// every user can traverse: $FEDMEM_BIN may lie in a checkout uid 65534
// cannot reach (under /root, say).
func worldReadableCopies(t *testing.T, bins testutil.Bins) (fedmem, fedmemRun string) {
	t.Helper()
	dir := testutil.TempDir(t)
	cp := func(src string) string {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, filepath.Base(src))
		if err := os.WriteFile(dst, b, 0o755); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	return cp(bins.Fedmem), cp(bins.FedmemRun)
}

func runDemoBinary(t *testing.T, fedmem, dir string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, fedmem, append([]string{"demo", "--dir", dir}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(withoutEnv(os.Environ(), "HOME"), "HOME=/nonexistent")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	default:
		t.Fatalf("fedmem demo: %v\n%s", err, out)
		return "", -1
	}
}

func checkDemoPassed(t *testing.T, out string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "promoted" && (strings.HasSuffix(f[1], "/leaked-aws-key.md") || strings.HasSuffix(f[1], "/forged-approval.md")) {
			t.Errorf("the gate promoted a hostile draft: %s", line)
		}
	}
	for _, want := range []string{
		", 0 NOT blocked",
		"blocked  append to 00-global/AGENT.md",
		"blocked  nested user namespace",
		"HEAD           ",
		"before and after: unchanged",
		"git status     clean",
		": identical",
		"sandbox-keeps-vault-read-only.md",
		"forged-approval.md",
		"leaked-aws-key.md",
		"RESULT: every write outside the session's inbox was blocked",
		// The gate's pass: the good note promoted by the gate identity,
		// the forged approval and the planted key rejected.
		"promoted  ",
		"sandbox-keeps-vault-read-only.md -> ",
		"fedmem-gate <gate@fedmem.invalid>: fedmem: promote",
		"/leaked-aws-key.md\n",
		"aws-access-token",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output misses %q", want)
		}
	}
}
