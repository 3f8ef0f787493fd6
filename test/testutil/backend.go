package testutil

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Backend is the sandbox backend the suites run fedmem-run with, from
// FEDMEM_BACKEND: namespace (the default, also for ""), runc or
// containerd. .ci/run runs the escape suite once per backend, with the
// same expectations.
func Backend() string {
	if b := os.Getenv("FEDMEM_BACKEND"); b != "" {
		return b
	}
	return "namespace"
}

// BackendArgs are fedmem-run's flags for Backend(): --backend, and for
// containerd --containerd-address from FEDMEM_CONTAINERD_ADDRESS. The
// container backends need a root caller; suites pass these for their root
// layouts only.
func BackendArgs() []string {
	switch b := Backend(); b {
	case "namespace":
		return nil
	case "containerd":
		args := []string{"--backend", b}
		if a := os.Getenv("FEDMEM_CONTAINERD_ADDRESS"); a != "" {
			args = append(args, "--containerd-address", a)
		}
		return args
	default:
		return []string{"--backend", b}
	}
}

// RequireBackendTools fails (or, outside FEDMEM_REQUIRE_ROOT=1, skips) t
// when a container backend's pieces are missing: its helper beside
// fedmem-run, runc in PATH, and for containerd a socket. The same rule as
// RequireRoot: where CI asks for them, they never skip silently.
func RequireBackendTools(t testing.TB, backend, fedmemRun, containerdSock string) {
	t.Helper()
	var missing string
	switch backend {
	case "runc":
		if _, err := os.Stat(filepath.Join(filepath.Dir(fedmemRun), "fedmem-runc")); err != nil {
			missing = "fedmem-runc beside " + fedmemRun + " (make build; cgo and libseccomp-dev)"
		}
	case "containerd":
		if _, err := os.Stat(filepath.Join(filepath.Dir(fedmemRun), "fedmem-containerd")); err != nil {
			missing = "fedmem-containerd beside " + fedmemRun + " (make build)"
		} else if _, err := exec.LookPath("runc"); err != nil {
			missing = "runc in PATH (apt-get install runc)"
		} else if containerdSock == "" {
			missing = "a containerd daemon (test/containerd/start.sh; FEDMEM_CONTAINERD_BIN or containerd in PATH)"
		}
	}
	if missing == "" {
		return
	}
	if os.Getenv("FEDMEM_REQUIRE_ROOT") == "1" {
		t.Fatalf("the %s backend needs %s, and FEDMEM_REQUIRE_ROOT=1 is set", backend, missing)
	}
	t.Skipf("the %s backend needs %s", backend, missing)
}

// Containerd returns the socket of a containerd the container backend
// tests may use: FEDMEM_CONTAINERD_ADDRESS when set (.ci/run starts one),
// else a private daemon started from FEDMEM_CONTAINERD_BIN (or the
// containerd in PATH) with test/containerd/start.sh under a temp dir and
// stopped when t ends; "" when none can be had.
func Containerd(t testing.TB) string {
	t.Helper()
	if a := os.Getenv("FEDMEM_CONTAINERD_ADDRESS"); a != "" {
		return a
	}
	bin := os.Getenv("FEDMEM_CONTAINERD_BIN")
	if bin == "" {
		p, err := exec.LookPath("containerd")
		if err != nil {
			return ""
		}
		bin = filepath.Dir(p)
	}
	for _, b := range []string{"containerd", "containerd-shim-runc-v2", "ctr"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			return ""
		}
	}
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := TempDir(t)
	out, err := exec.Command(filepath.Join(root, "test/containerd/start.sh"), dir, bin).CombinedOutput()
	if err != nil {
		t.Fatalf("start containerd: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command(filepath.Join(root, "test/containerd/stop.sh"), dir).Run() })
	return filepath.Join(dir, "containerd.sock")
}

// RequireReportBackend fails t unless the session report at path names
// Backend() in layers.backend: a matrix run that quietly fell back to
// another backend would otherwise pass for the one it was asked to test.
func RequireReportBackend(t testing.TB, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("session report: %v", err)
	}
	var r struct {
		Layers struct {
			Backend string `json:"backend"`
		} `json:"layers"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("session report %s: %v", path, err)
	}
	if r.Layers.Backend != Backend() {
		t.Fatalf("session report %s: layers.backend = %q, want %q (FEDMEM_BACKEND)", path, r.Layers.Backend, Backend())
	}
}

// SkipUnprivilegedCaller skips a test whose fedmem-run caller is an
// unprivileged user when Backend() is runc or containerd: those backends
// refuse such a caller before a session exists (sandbox.CheckCaller;
// rootless runc/containerd are not supported, docs/backends.md), which
// test/escape TestContainerBackendRefusesUnprivilegedCaller asserts. The layout itself is covered by the namespace backend's run of
// the same test. Not an environment skip: no setting makes it run.
func SkipUnprivilegedCaller(t testing.TB) {
	t.Helper()
	if b := Backend(); b != "namespace" {
		t.Skipf("the %s backend refuses an unprivileged caller (TestContainerBackendRefusesUnprivilegedCaller); this layout runs under the namespace backend", b)
	}
}
