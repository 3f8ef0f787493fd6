package escape

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fedmem/fedmem/test/testutil"
)

// TestWorkdirInRootOwnedRepo: a root caller's agent runs as an unprivileged
// uid; its workdir is idmapped to that uid, but the repository around it is
// root's, so Git inside refused it: "detected dubious ownership in
// repository" (issue 23). fedmem-run names the workdir's repository (the
// nearest folder above it holding .git) in safe.directory, beside the
// vault: `git status` and `git log` work in a workdir inside a root-owned
// repository, and the control with those settings cleared is still
// refused, so the setting is what makes it work.
func TestWorkdirInRootOwnedRepo(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	repo := filepath.Join(e.base, "project")
	wd := filepath.Join(repo, "sub")
	must(t, os.MkdirAll(wd, 0o755))
	must(t, os.WriteFile(filepath.Join(wd, "main.go"), []byte("package main\n"), 0o644))
	if _, err := testutil.Git(repo, "init", "-q"); err != nil {
		t.Fatal(err)
	}
	if _, err := testutil.Git(repo, "-c", "user.name=u", "-c", "user.email=u@x", "commit", "-q", "--allow-empty", "-m", "first"); err != nil {
		t.Fatal(err)
	}
	script := `git status --porcelain=v1 -uall 2>&1; echo "rc=$?"; git log --format=LOG:%s 2>&1; echo ---; GIT_CONFIG_COUNT=0 git status 2>&1; echo "rc=$?"`
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append([]string{"--vault", e.vault.Dir, "--workdir", wd}, testutil.BackendArgs()...)
	cmd := exec.CommandContext(ctx, e.bins.FedmemRun, append(append(args, "--"), "/bin/sh", "-c", script)...)
	cmd.Dir = wd
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME=" + e.home, "LANG=C"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("fedmem-run: %v\n%s", err, out)
	}
	with, without, _ := strings.Cut(string(out), "---")
	if strings.Contains(with, "dubious ownership") || !strings.Contains(with, "rc=0") || !strings.Contains(with, "LOG:first") {
		t.Errorf("git in a workdir inside a root-owned repository failed inside the sandbox:\n%s", out)
	}
	if !strings.Contains(with, "?? sub/main.go") {
		t.Errorf("git status does not list the workdir's untracked file:\n%s", with)
	}
	if !strings.Contains(without, "dubious ownership") {
		t.Errorf("control: with the settings cleared, git should refuse the root-owned repository as dubious ownership:\n%s", without)
	}
}
