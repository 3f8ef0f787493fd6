package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/test/testutil"
)

// TestReviewerGitLog: in the two-user layout the vault belongs to the gate
// user, and Git refused every other user's `git log` in it as "dubious
// ownership" (issue 23). `fedmem init --gate-user`, as root, lists the
// vault's exact path as safe.directory in fedmem's own file beside the
// system config and includes that file from it, once however often init
// runs. A reviewer (another uid, empty home) then reads the history; the
// control, the same command with the system config off, is still refused,
// so the file is what makes it work. --no-git-safe-directory leaves the
// system config alone. The system config is the test's own
// ($GIT_CONFIG_SYSTEM), never the machine's /etc/gitconfig.
func TestReviewerGitLog(t *testing.T) {
	testutil.RequireRoot(t)
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv (util-linux) not installed")
	}
	bin := testutil.Binaries(t).Fedmem
	base := testutil.TempDir(t)
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	sys := filepath.Join(base, "etc", "gitconfig")
	if err := os.MkdirAll(filepath.Dir(sys), 0o755); err != nil {
		t.Fatal(err)
	}
	own := filepath.Join(base, "etc", "fedmem", "gitconfig")
	env := append(os.Environ(), "GIT_CONFIG_SYSTEM="+sys)
	v := filepath.Join(base, "vault")
	for i := 0; i < 2; i++ { // the second run finds everything in place
		cmd := exec.Command(bin, "init", "--gate-user", "64000", "--agent-group", "64000", "--reviewer", "alice", v)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("fedmem init: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "safe.directory in "+own) {
			t.Errorf("init does not say where the vault was listed:\n%s", out)
		}
	}
	b, err := os.ReadFile(own)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(b), "directory = ") != 1 || !strings.Contains(string(b), "directory = "+v+"\n") {
		t.Errorf("%s should list exactly the vault, once:\n%s", own, b)
	}
	if b, _ := os.ReadFile(sys); strings.Count(string(b), "path = "+own) != 1 {
		t.Errorf("%s should include %s once:\n%s", sys, own, b)
	}

	home := filepath.Join(base, "reviewer-home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		t.Fatal(err)
	}
	gitAs := func(extra ...string) (string, error) {
		cmd := exec.Command("setpriv", "--reuid", "64002", "--regid", "64002", "--clear-groups", "--", "git", "-C", v, "log", "--format=LOG:%an")
		cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + home, "GIT_CONFIG_SYSTEM=" + sys, "LC_ALL=C"}, extra...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := gitAs(); err != nil || !strings.Contains(out, "LOG:fedmem-gate") {
		t.Errorf("a reviewer's git log in the gate's vault: %v\n%s", err, out)
	}
	if out, err := gitAs("GIT_CONFIG_NOSYSTEM=1"); err == nil || !strings.Contains(out, "dubious ownership") {
		t.Errorf("control: without the system config git should refuse the vault as dubious ownership: %v\n%s", err, out)
	}

	// Opted out: nothing is added for a second vault.
	v2 := filepath.Join(base, "vault2")
	cmd := exec.Command(bin, "init", "--gate-user", "64000", "--no-git-safe-directory", v2)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("fedmem init --no-git-safe-directory: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(own); strings.Contains(string(b), v2) {
		t.Errorf("--no-git-safe-directory listed the vault:\n%s", b)
	}
}
