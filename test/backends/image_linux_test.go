package backends

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fedmem/fedmem/test/testutil"
)

// ociArchive writes an OCI image layout archive holding one layer: the
// files given (path → content, mode 0755), named ref.
func ociArchive(t *testing.T, out, ref string, files map[string][]byte) {
	t.Helper()
	var layer bytes.Buffer
	gz := gzip.NewWriter(&layer)
	tw := tar.NewWriter(gz)
	var diff bytes.Buffer // the uncompressed tar, for the diff id
	dtw := tar.NewWriter(&diff)
	for name, body := range files {
		h := &tar.Header{Name: name, Mode: 0o755, Size: int64(len(body)), Typeflag: tar.TypeReg}
		for _, w := range []*tar.Writer{tw, dtw} {
			if err := w.WriteHeader(h); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(body); err != nil {
				t.Fatal(err)
			}
		}
	}
	tw.Close()
	gz.Close()
	dtw.Close()
	digest := func(b []byte) string { s := sha256.Sum256(b); return "sha256:" + hex.EncodeToString(s[:]) }
	config, _ := json.Marshal(map[string]any{
		"architecture": "amd64", "os": "linux",
		"config": map[string]any{"Env": []string{"PATH=/"}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{digest(diff.Bytes())}},
	})
	manifest, _ := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
		"config": map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": digest(config), "size": len(config)},
		"layers": []any{map[string]any{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": digest(layer.Bytes()), "size": layer.Len()}},
	})
	index, _ := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"manifests": []any{map[string]any{"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": digest(manifest), "size": len(manifest),
			"annotations": map[string]string{"io.containerd.image.name": ref, "org.opencontainers.image.ref.name": ref}}},
	})
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	aw := tar.NewWriter(f)
	add := func(name string, b []byte) {
		if err := aw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := aw.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	add("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`))
	add("index.json", index)
	for _, b := range [][]byte{config, manifest, layer.Bytes()} {
		add("blobs/sha256/"+strings.TrimPrefix(digest(b), "sha256:"), b)
	}
	if err := aw.Close(); err != nil {
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
