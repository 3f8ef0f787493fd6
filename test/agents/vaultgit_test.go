package agents

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/fedmem/fedmem/test/testutil"
)

// TestAgentReadsVaultHistory: in the two-user layout (the vault belongs to
// gate uid 64000, the agent runs as 64001 in the agent group), `git -C
// $FEDMEM_VAULT log` works
// inside the sandbox, because fedmem-run sets safe.directory for the vault
// through GIT_CONFIG_COUNT. The control, the same command with that
// variable cleared, is refused by Git as "dubious ownership": the setting
// is what makes it work, and it names the vault only.
func TestAgentReadsVaultHistory(t *testing.T) {
	testutil.RequireRoot(t)
	need(t, "git")
	bins := testutil.Binaries(t)
	base := testutil.TempDir(t)
	v, work := filepath.Join(base, "vault"), filepath.Join(base, "work")
	if out, err := testutil.InitCommand(t, bins.Fedmem, v, "--gate-user", "64000", "--agent-group", "64000").CombinedOutput(); err != nil {
		t.Fatalf("fedmem init: %v\n%s", err, out)
	}
	writeTree(t, work, map[string]string{"README.md": "x\n"})
	head, err := testutil.Git(v, "rev-parse", "--short", "HEAD")
	if err != nil {
		t.Fatal(err)
	}
	script := `git -C "$FEDMEM_VAULT" log --format=LOG:%h 2>&1; echo "SAFE=$GIT_CONFIG_KEY_0=$GIT_CONFIG_VALUE_0"; echo ---; GIT_CONFIG_COUNT=0 git -C "$FEDMEM_VAULT" log --format=LOG:%h 2>&1; echo rc=$?`
	// The agent's user starts fedmem-run itself, in the vault's agent group.
	home := filepath.Join(base, "home")
	os.MkdirAll(home, 0o755)
	for _, d := range []string{home, work} {
		if err := os.Chown(d, 64001, 64000); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bins.FedmemRun, "--vault", v, "--", "/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 64001, Gid: 64000, Groups: []uint32{}}}
	cmd.Dir = work
	cmd.Env = []string{"HOME=" + home, "PATH=/usr/local/bin:/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("fedmem-run: %v", err)
	}
	with, without, _ := strings.Cut(string(out), "---")
	if !strings.Contains(with, "LOG:"+strings.TrimSpace(head)) {
		t.Fatalf("git log of the vault failed inside the sandbox (want commit %s)", strings.TrimSpace(head))
	}
	if !strings.Contains(with, "SAFE=safe.directory="+v) {
		t.Fatalf("safe.directory is not set to exactly the vault")
	}
	if strings.Contains(without, "LOG:") || !strings.Contains(without, "dubious ownership") {
		t.Fatalf("control: without safe.directory git should refuse the gate's repository as dubious ownership")
	}
}
