package e2e

import (
	"bytes"
	"context"
	"encoding/json"
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

func TestMain(m *testing.M) { os.Exit(testutil.Main(m)) }

const (
	gateUID  = 64000
	agentUID = 64001
)

func as(uid, gid int, groups []uint32, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: groups}}
	return cmd
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := testutil.Git(dir, args...)
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return out
}

// The agent script: three drafts (one to promote, one held for review, one
// invalid), then it waits inside its sandbox for the gate's receipts and
// prints them.
const agentScript = `set -e
cd "$FEDMEM_INBOX"
printf -- '---\ntype: Fact\ntitle: Gate runs as its own user\nconfidence: verified\n---\nThe gate promoted this.\n' > good.md.tmp
mv good.md.tmp good.md
printf -- '---\ntype: Fact\ntitle: A hunch worth a look\nconfidence: hypothesis\n---\nMaybe.\n' > hunch.md.tmp
mv hunch.md.tmp hunch.md
printf -- 'no frontmatter at all\n' > bad.md
i=0
while [ ! -f .receipts/good.md.json ] || [ ! -f .receipts/hunch.md.json ] || [ ! -f .receipts/bad.md.json ]; do
  i=$((i+1)); [ $i -lt 600 ] || { echo "no receipts after 60s"; ls -la . .receipts || true; exit 3; }; sleep 0.1
done
for d in good hunch bad; do echo "RECEIPT $d $(tr -d '\n ' < .receipts/$d.md.json)"; done
`

// TestTwoUsersEndToEnd: a vault owned by a gate uid; an agent uid (member
// of the vault's agent group) runs in fedmem-run and drops drafts; `fedmem
// gate run`, as the gate uid, promotes one, holds one and rejects one; the
// agent reads the three receipts inside its sandbox; a reviewer approves
// the held draft over the review socket; the repository is valid for
// `git fsck --strict`, clean, and every commit is the gate's; and the
// agent's uid cannot write the vault's protected paths on the host either.
func TestTwoUsersEndToEnd(t *testing.T) {
	testutil.RequireRoot(t)
	bins := testutil.Binaries(t)
	base := testutil.TempDir(t)
	v := filepath.Join(base, "vault")
	work := filepath.Join(base, "work")
	home := filepath.Join(base, "home")
	for _, d := range []string{work, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(d, agentUID, agentUID); err != nil {
			t.Fatal(err)
		}
	}
	// The binaries must be executable by the other uids.
	if out, err := exec.Command(bins.Fedmem, "init", v, "--gate-user", "64000", "--agent-group", "64000", "--reviewer", "root").CombinedOutput(); err != nil {
		t.Fatalf("fedmem init: %v\n%s", err, out)
	}
	head0 := strings.TrimSpace(git(t, v, "rev-parse", "HEAD"))

	// The gate, as its own uid.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	gateCmd := as(gateUID, gateUID, []uint32{}, bins.Fedmem, "gate", "run", "--vault", v, "--interval", "300ms")
	gateCmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + base}
	var gateLog bytes.Buffer
	gateCmd.Stdout, gateCmd.Stderr = &gateLog, &gateLog
	if err := gateCmd.Start(); err != nil {
		t.Fatal(err)
	}
	gateDone := make(chan error, 1)
	go func() { gateDone <- gateCmd.Wait() }()
	defer func() {
		gateCmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-gateDone:
		case <-time.After(20 * time.Second):
			gateCmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("gate log:\n%s", gateLog.String())
		}
	}()
	sock := filepath.Join(vault.GateStateDir(v), "review.sock")
	for end := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("the gate never opened its review socket %s\n%s", sock, gateLog.String())
		}
	}

	// The agent, as another uid in the vault's agent group.
	agentCtx, agentCancel := context.WithTimeout(ctx, 2*time.Minute)
	defer agentCancel()
	agent := as(agentUID, agentUID, []uint32{gateUID}, bins.FedmemRun, "--vault", v, "--workdir", work, "--report", filepath.Join(work, "report.json"), "--", "/bin/sh", "-c", agentScript)
	agent.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
	agent.Dir = work
	out, err := agent.CombinedOutput()
	if agentCtx.Err() != nil || err != nil {
		t.Fatalf("agent: %v\n%s", err, out)
	}
	receipts := map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(l, "RECEIPT "); ok {
			name, body, _ := strings.Cut(rest, " ")
			receipts[name] = body
		}
	}
	for name, want := range map[string]string{"good": `"state":"promoted"`, "hunch": `"state":"pending"`, "bad": `"state":"rejected"`} {
		if !strings.Contains(receipts[name], want) {
			t.Errorf("receipt for %s.md seen in the sandbox: %q, want %s", name, receipts[name], want)
		}
	}
	if !strings.Contains(receipts["bad"], `"line":1`) {
		t.Errorf("the rejection receipt does not name the line: %s", receipts["bad"])
	}

	// The promoted note is committed by the gate, with provenance from the
	// enforcer: the agent's uid, not anything the draft said.
	good := filepath.Join(v, "20-domains", "gate-runs-as-its-own-user.md")
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatalf("promoted note: %v\n%s", err, git(t, v, "log", "--stat"))
	}
	if !strings.Contains(string(b), `uid: "64001"`) || !strings.Contains(string(b), "status: stable") {
		t.Errorf("promoted note lacks the enforcer's provenance:\n%s", b)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(good, &st); err != nil || st.Uid != gateUID {
		t.Errorf("promoted note owned by uid %d, want the gate's %d", st.Uid, gateUID)
	}

	// A human approves the held draft over the review socket.
	list, err := exec.Command(bins.Fedmem, "review", "--vault", v, "list", "--json").CombinedOutput()
	if err != nil {
		t.Fatalf("review list: %v\n%s", err, list)
	}
	id := pendingID(t, list, "hunch.md")
	if out, err := exec.Command(bins.Fedmem, "review", "--vault", v, "approve", id).CombinedOutput(); err != nil {
		t.Fatalf("review approve %s: %v\n%s", id, err, out)
	}
	approved, err := os.ReadFile(filepath.Join(v, "20-domains", "a-hunch-worth-a-look.md"))
	if err != nil || !strings.Contains(string(approved), "human:root") {
		t.Fatalf("approved note: %v\n%s", err, approved)
	}
	if msg := git(t, v, "log", "-1", "--format=%B"); !strings.Contains(msg, "Fedmem-Reviewer: root") {
		t.Errorf("approval commit does not name the reviewer:\n%s", msg)
	}

	// The repository: valid, clean, every commit since init by the gate.
	if out, err := testutil.Git(v, "fsck", "--strict"); err != nil {
		t.Fatalf("git fsck --strict: %v\n%s", err, out)
	}
	if s := git(t, v, "--no-optional-locks", "status", "--porcelain"); strings.TrimSpace(s) != "" {
		t.Errorf("git status not clean after promotions:\n%s", s)
	}
	for _, l := range strings.Split(strings.TrimSpace(git(t, v, "log", "--format=%an <%ae>|%cn", head0+"..HEAD")), "\n") {
		if l != "fedmem-gate <gate@fedmem.invalid>|fedmem-gate" {
			t.Errorf("a commit not by the gate identity: %q", l)
		}
	}
	if n := len(strings.Split(strings.TrimSpace(git(t, v, "log", "--format=%H", head0+"..HEAD")), "\n")); n != 2 {
		t.Errorf("%d commits since init, want 2 (one promotion, one approval)", n)
	}

	// On the host, outside any sandbox, the agent's uid still cannot write
	// the vault's protected paths: only the gate does.
	for _, p := range []string{"00-global/AGENT.md", ".git/config", ".git/refs/heads/main", "20-domains/gate-runs-as-its-own-user.md"} {
		f, err := openAs(t, agentUID, filepath.Join(v, p))
		if err == nil {
			t.Errorf("uid %d opened %s for writing on the host", agentUID, p)
			f.Close()
		} else if !errors.Is(err, os.ErrPermission) {
			t.Errorf("uid %d writing %s: %v, want permission denied", agentUID, p, err)
		}
	}
}

func pendingID(t *testing.T, list []byte, draft string) string {
	t.Helper()
	var items []map[string]any
	dec := json.NewDecoder(bytes.NewReader(list))
	var raw any
	if err := dec.Decode(&raw); err != nil {
		t.Fatalf("review list --json: %v\n%s", err, list)
	}
	switch r := raw.(type) {
	case []any:
		for _, x := range r {
			if m, ok := x.(map[string]any); ok {
				items = append(items, m)
			}
		}
	case map[string]any:
		for _, k := range []string{"decisions", "pending", "items"} {
			if xs, ok := r[k].([]any); ok {
				for _, x := range xs {
					if m, ok := x.(map[string]any); ok {
						items = append(items, m)
					}
				}
			}
		}
	}
	for _, m := range items {
		if s, _ := m["draft"].(string); s == draft {
			if id, ok := m["id"].(string); ok {
				return id
			}
		}
	}
	t.Fatalf("%s not pending in:\n%s", draft, list)
	return ""
}

// openAs opens path for writing as uid, in a child process (the test runs
// as root, which file permissions do not stop).
func openAs(t *testing.T, uid int, path string) (*os.File, error) {
	t.Helper()
	cmd := as(uid, uid, []uint32{gateUID}, "/bin/sh", "-c", `exec 3>>"$1"`, "sh", path)
	out, err := cmd.CombinedOutput()
	if err == nil {
		return os.Open(os.DevNull)
	}
	if strings.Contains(string(out), "Permission denied") {
		return nil, os.ErrPermission
	}
	return nil, errors.New(strings.TrimSpace(string(out)))
}
