package boundary

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// goListDepsCgo is goListDeps for a binary built with cgo (fedmem-runc:
// libcontainer's nsexec is C).
func goListDepsCgo(t *testing.T, root, pkg string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1", "GOOS=linux")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, stderr.String())
	}
	return strings.Fields(string(out))
}

// helperForbidden: the runtime helpers run on the untrusted side like
// fedmem-run: no gate, no Git, no secret scanner.
var helperForbidden = []string{
	"github.com/go-git/",
	"github.com/zricethezav/gitleaks",
	module + "/gate",
	module + "/vault/repo",
}

// TestContainerHelpersBoundary: the container backends' runtimes live in
// helpers fedmem-run execs — libcontainer (cgo) in fedmem-runc, the
// containerd client (gRPC, net/http) in fedmem-containerd — while
// fedmem-run links only the translation (sandbox/oci), never a helper's
// package; each helper links its runtime and nothing of the trusted side.
func TestContainerHelpersBoundary(t *testing.T) {
	root := moduleRoot(t)
	run := goListDeps(t, root, "./cmd/fedmem-run")
	if !contains(run, module+"/sandbox/oci") {
		t.Errorf("cmd/fedmem-run does not link sandbox/oci: the container backends must share its one translation")
	}
	for _, p := range []string{module + "/sandbox/oci/runc", module + "/sandbox/oci/ctrd", "google.golang.org/grpc"} {
		if containsPrefix(run, p) {
			t.Errorf("cmd/fedmem-run links %s: it belongs in a helper binary", p)
		}
	}
	for _, h := range []struct {
		cmd, must string
		cgo       bool
	}{
		{"./cmd/fedmem-runc", "github.com/opencontainers/runc/libcontainer", true},
		{"./cmd/fedmem-containerd", "github.com/containerd/containerd/v2/client", false},
	} {
		var deps []string
		if h.cgo {
			deps = goListDepsCgo(t, root, h.cmd)
		} else {
			deps = goListDeps(t, root, h.cmd)
		}
		if !contains(deps, h.must) {
			t.Errorf("%s does not link %s (got %d packages): the positive control failed", h.cmd, h.must, len(deps))
		}
		if bad := violations(deps, helperForbidden); len(bad) > 0 {
			t.Errorf("%s links trusted-side packages:\n  %s", h.cmd, strings.Join(bad, "\n  "))
		}
	}
}

// TestCredentialHelperBoundary: the credential proxy's TLS and HTTP stack
// (net/http, crypto/tls, package intercept) lives in fedmem-cred, which
// fedmem-run starts only for a session with credentials; fedmem-run links
// the wire types (sandbox/netproxy) and never intercept. The helper holds
// the caller's real credentials and links nothing of the trusted side.
func TestCredentialHelperBoundary(t *testing.T) {
	root := moduleRoot(t)
	run := goListDeps(t, root, "./cmd/fedmem-run")
	if containsPrefix(run, module+"/sandbox/netproxy/intercept") {
		t.Errorf("cmd/fedmem-run links sandbox/netproxy/intercept: it belongs in fedmem-cred")
	}
	if !contains(run, module+"/sandbox/netproxy") {
		t.Errorf("cmd/fedmem-run does not link sandbox/netproxy (positive control)")
	}
	deps := goListDeps(t, root, "./cmd/fedmem-cred")
	for _, must := range []string{module + "/sandbox/netproxy/intercept", "net/http/httputil", "crypto/tls"} {
		if !contains(deps, must) {
			t.Errorf("cmd/fedmem-cred does not link %s (positive control)", must)
		}
	}
	if bad := violations(deps, helperForbidden); len(bad) > 0 {
		t.Errorf("cmd/fedmem-cred links trusted-side packages:\n  %s", strings.Join(bad, "\n  "))
	}
	if containsPrefix(deps, module+"/sandbox/oci") || contains(deps, module+"/sandbox") {
		t.Errorf("cmd/fedmem-cred links a sandbox backend: it needs the proxy's wire types only")
	}
}

// walkGoSources calls fn for every non-test .go file under root, skipping
// testdata, vendor, bin, node_modules and hidden or _ directories, and any
// directory skip names (its slash path relative to root; nil: none).
func walkGoSources(root string, skip func(rel string) bool, fn func(path string) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path == root {
				return nil
			}
			rel, _ := filepath.Rel(root, path)
			switch {
			case name == "testdata" || name == "vendor" || name == "bin" || name == "node_modules",
				strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_"),
				skip != nil && skip(filepath.ToSlash(rel)):
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			return nil
		}
		return fn(path)
	})
}
