package escape

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/test/testutil"
)

// TestVerificationFailsClosed runs a fedmem-run built with the fedmemfault
// tag, whose mount code binds the vault writable by mistake. The live check
// of the mount table must catch it: exit 125, a message naming the vault
// and the rule, and the agent never started.
func TestVerificationFailsClosed(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	root, err := testutil.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(e.base, "fedmem-run-fault")
	build := exec.Command("go", "build", "-tags", "fedmemfault", "-o", bin, "./cmd/fedmem-run")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the fault binary: %v\n%s", err, out)
	}
	// The container backends' helpers beside it, where fedmem-run looks.
	for _, h := range []string{"fedmem-runc", "fedmem-containerd"} {
		if p := filepath.Join(filepath.Dir(e.bins.FedmemRun), h); testutil.Backend() != "namespace" {
			must(t, os.Symlink(p, filepath.Join(e.base, h)))
		}
	}
	inboxBefore := inboxFolders(t, e.vault.Dir)
	marker := filepath.Join(e.workdir, "agent-ran")
	args := append([]string{"--vault", e.vault.Dir, "--workdir", e.workdir}, testutil.BackendArgs()...) // FEDMEM_BACKEND's matrix
	cmd := exec.Command(bin, append(args, "--", "/bin/sh", "-c", "touch "+marker+"; echo pwned >> "+filepath.Join(e.vault.Dir, e.vault.Note))...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + e.home}
	out, err := cmd.CombinedOutput()
	if code := exitCode(err); code != 125 {
		t.Fatalf("exit %d, want 125 (fedmem error); output:\n%s", code, out)
	}
	if !strings.Contains(string(out), "vault-readonly") || !strings.Contains(string(out), e.vault.Dir) {
		t.Fatalf("the error does not name the rule and the vault:\n%s", out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the agent ran although the vault was writable")
	}
	// Refused before its agent started: no session folder is left in
	// 90-inbox/ (issue 23).
	if after := inboxFolders(t, e.vault.Dir); strings.Join(after, " ") != strings.Join(inboxBefore, " ") {
		t.Errorf("the refused run left a session folder: 90-inbox/ held %v, now %v", inboxBefore, after)
	}
	if b, _ := os.ReadFile(filepath.Join(e.vault.Dir, e.vault.Note)); strings.Contains(string(b), "pwned") {
		t.Fatal("the note was changed")
	}
	// The release binary has no such fault.
	r := e.run(t, nil, "/bin/true")
	if r.code != 0 {
		t.Fatalf("release binary: exit %d\n%s", r.code, r.stderr)
	}
}

// inboxFolders lists the session folders in the vault's inbox (sorted).
func inboxFolders(t *testing.T, vaultDir string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(vaultDir, "90-inbox"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out
}
