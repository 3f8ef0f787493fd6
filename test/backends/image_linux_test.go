package backends

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fedmem/fedmem/test/testutil"
)

// ociArchive writes an OCI image layout archive (testutil.OCIArchive).
func ociArchive(t *testing.T, out, ref string, files map[string][]byte) {
	t.Helper()
	if err := testutil.OCIArchive(out, ref, files); err != nil {
		t.Fatal(err)
	}
}

// TestContainerdImage: with --image the agent runs in an image imported
// from a local OCI archive (no registry): the image's files, not the
// host's, with the vault bound in read-only and the inbox writable, the
// image's root read-only.
func TestContainerdImage(t *testing.T) {
	s := prepare(t, "containerd")
	root, err := testutil.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := testutil.TempDir(t)
	probe := filepath.Join(dir, "probe")
	build := exec.Command("go", "build", "-o", probe, "./test/backends/probe")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build probe: %v\n%s", err, out)
	}
	body, err := os.ReadFile(probe)
	if err != nil {
		t.Fatal(err)
	}
	ref := "docker.io/fedmem/probe:test"
	archive := filepath.Join(dir, "probe.tar")
	ociArchive(t, archive, ref, map[string][]byte{"probe": body, "probe-image-marker": []byte("image\n")})
	helper := filepath.Join(filepath.Dir(s.bins.FedmemRun), "fedmem-containerd")
	sock := s.args[len(s.args)-1]
	if out, err := exec.Command(helper, "import", "--address", sock, "--namespace", "fedmem", archive).CombinedOutput(); err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s.args = append(s.args, "--image", ref)
	cmd := s.command(ctx, "/probe")
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if code := exitCode(cmd.Run()); code != 3 {
		t.Fatalf("exit %d, want the probe's 3\nstdout:\n%s\nstderr:\n%s", code, so.String(), se.String())
	}
	for _, want := range []string{"image-marker=ok", "host-usr=no such file or directory", "vault=read-only file system", "inbox=ok", "rootfs=read-only file system"} {
		if !strings.Contains(so.String(), want+"\n") {
			t.Errorf("probe output lacks %q:\n%s", want, so.String())
		}
	}
	drafts, _ := filepath.Glob(filepath.Join(s.vault.Dir, "90-inbox/2*/from-image.md"))
	if len(drafts) != 1 {
		t.Errorf("inbox drafts from the image: %v, want one", drafts)
	}
	if _, err := os.Stat(filepath.Join(s.vault.Dir, "10-projects/from-image.md")); err == nil {
		t.Errorf("the image's agent wrote the vault")
	}
}
