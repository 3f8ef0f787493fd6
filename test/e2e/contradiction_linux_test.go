package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

// TestTwoUsersContradictionDecided (issue 24 item 3, issue 19 item 3) in
// the two-user layout: a human note in a sub-folder,
// 20-domains/infra/deployment-region.md (us-east-1); an agent in fedmem-run,
// under a profile the policy trusts, writes "Deployment region: eu-west-1".
// Before, the draft promoted beside the human note (the conflict check saw
// one folder), and an approval of a held one made `-2.md`. Now the gate
// holds it (receipt: conflict, naming the note); `fedmem review approve`
// without a choice exits 1 naming the note and the choices; `--supersede`
// promotes it and deprecates the human note in the same commit: one note
// in force for the name.
func TestTwoUsersContradictionDecided(t *testing.T) {
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
	if out, err := testutil.InitCommand(t, bins.Fedmem, v, "--gate-user", "64000", "--agent-group", "64000", "--reviewer", "root").CombinedOutput(); err != nil {
		t.Fatalf("fedmem init: %v\n%s", err, out)
	}
	pol := "version: 1\nreviewers: [root]\nauto_promote:\n  profiles: [default]\n  types: [Fact]\n  max_per_session: 20\n"
	human := "---\ntype: Fact\ntitle: Deployment region\n---\nProduction runs in us-east-1.\n"
	files := map[string]string{"00-global/policy.yaml": pol, "20-domains/infra/deployment-region.md": human}
	for p, c := range files {
		full := filepath.Join(v, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(filepath.Dir(full), gateUID, gateUID); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(full, gateUID, gateUID); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := as(gateUID, gateUID, []uint32{}, "git", "-c", "safe.directory=*", "-C", v, "add", "00-global/policy.yaml", "20-domains/infra/deployment-region.md").CombinedOutput(); err != nil {
		t.Fatalf("git add as the gate: %v\n%s", err, out)
	}
	if out, err := as(gateUID, gateUID, []uint32{}, "git", "-c", "safe.directory=*", "-C", v, "-c", "user.name=alice", "-c", "user.email=alice@example.com", "commit", "-q", "-m", "policy and a human note").CombinedOutput(); err != nil {
		t.Fatalf("commit as the gate: %v\n%s", err, out)
	}
	draftDir := filepath.Join(work, "drafts")
	if err := os.Mkdir(draftDir, 0o755); err != nil {
		t.Fatal(err)
	}
	draft := "---\ntype: Fact\ntitle: Deployment region\nsources: [20-domains/infra/deployment-region.md]\n---\nProduction runs in eu-west-1.\n"
	if err := os.WriteFile(filepath.Join(draftDir, "region.md"), []byte(draft), 0o644); err != nil {
		t.Fatal(err)
	}

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
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	agentArgs := append([]string{"--vault", v, "--workdir", work, "--agent-user", fmt.Sprintf("%d:%d", agentUID, gateUID)}, testutil.BackendArgs()...)
	agent := exec.CommandContext(ctx, bins.FedmemRun, append(agentArgs, "--", "/bin/sh", "-c", agentScript, "agent", draftDir)...)
	agent.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
	agent.Dir = work
	out, err := agent.CombinedOutput()
	if ctx.Err() != nil || err != nil {
		t.Fatalf("agent: %v\n%s", err, out)
	}
	var receipt string
	for _, l := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(l, "RECEIPT region "); ok {
			receipt = rest
		}
	}
	if !strings.Contains(receipt, `"state":"pending"`) || !strings.Contains(receipt, `"rule":"conflict"`) || !strings.Contains(receipt, "20-domains/infra/deployment-region.md") {
		t.Fatalf("receipt seen in the sandbox: %s, want pending with a conflict naming the human note", receipt)
	}
	head := git(t, v, "rev-parse", "HEAD")

	list, err := exec.Command(bins.Fedmem, "review", "--vault", v, "list", "--json").CombinedOutput()
	if err != nil {
		t.Fatalf("review list: %v\n%s", err, list)
	}
	id := pendingID(t, list, "region.md")
	cmd := exec.Command(bins.Fedmem, "review", "--vault", v, "approve", id)
	msg, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(msg), "20-domains/infra/deployment-region.md") || !strings.Contains(string(msg), "--supersede") {
		t.Fatalf("approve without a choice: %v\n%s", err, msg)
	}
	if git(t, v, "rev-parse", "HEAD") != head {
		t.Fatal("a refused approval committed")
	}
	if out, err := exec.Command(bins.Fedmem, "review", "--vault", v, "approve", "--supersede", id).CombinedOutput(); err != nil {
		t.Fatalf("approve --supersede: %v\n%s", err, out)
	}
	old, _ := os.ReadFile(filepath.Join(v, "20-domains/infra/deployment-region.md"))
	if !strings.Contains(string(old), "status: deprecated") || !strings.Contains(string(old), "superseded_by: 20-domains/deployment-region.md") {
		t.Errorf("the human note was not superseded:\n%s", old)
	}
	changed := git(t, v, "show", "--name-only", "--format=", "HEAD")
	for _, p := range []string{"20-domains/deployment-region.md", "20-domains/infra/deployment-region.md"} {
		if !strings.Contains(changed, p+"\n") {
			t.Errorf("the approval commit should change %s:\n%s", p, changed)
		}
	}
	if nn, err := os.ReadFile(filepath.Join(v, "20-domains/deployment-region.md")); err != nil || !strings.Contains(string(nn), "eu-west-1") || !strings.Contains(string(nn), "human:root") {
		t.Errorf("approved note: %v\n%s", err, nn)
	}
	if s := git(t, v, "--no-optional-locks", "status", "--porcelain"); strings.TrimSpace(s) != "" {
		t.Errorf("git status not clean:\n%s", s)
	}
	if out, err := testutil.Git(v, "fsck", "--strict"); err != nil {
		t.Fatalf("git fsck --strict: %v\n%s", err, out)
	}
}
