package boundary

import (
	"bytes"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/fedmem/fedmem"

// launcherForbidden are import-path prefixes the untrusted-side launcher must
// never link. Each one is trusted-side code or a heavy dependency whose
// package init() would run twice on every launch (launcher and re-exec'd
// init), and go-git/gitleaks in the launcher would blur the trust boundary.
var launcherForbidden = []string{
	"github.com/go-git/",
	"github.com/zricethezav/gitleaks",
	module + "/gate",
	module + "/vault/repo", // writes the repository: trusted side only (see vault/doc.go)
	"github.com/containerd/",
	"github.com/opencontainers/runc",
	// net/http (and crypto/tls behind it) is linked on purpose: the proxy
	// reads and writes every plain-HTTP request with it (issue 22: a
	// home-made head parser spliced the connection after the first one).
}

// gateForbidden are prefixes the gate must never link: it runs as the vault's
// owner and must not carry sandbox backends (or their namespace code).
var gateForbidden = []string{
	module + "/sandbox",
	"github.com/containerd/",
	"github.com/opencontainers/runc",
}

// moduleRoot returns the directory holding go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		t.Fatalf("go env GOMOD: not inside a module (got %q)", gomod)
	}
	return filepath.Dir(gomod)
}

// goListDeps returns the transitive dependencies of pattern, built the way
// the Makefile builds the binaries (CGO_ENABLED=0, so cgo-only files of a
// dependency cannot hide an import).
func goListDeps(t *testing.T, root string, pattern ...string) []string {
	t.Helper()
	args := append([]string{"list", "-deps"}, pattern...)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.Fields(string(out))
}

// violations returns the deps that match one of the forbidden prefixes.
func violations(deps, forbidden []string) []string {
	var bad []string
	for _, d := range deps {
		for _, f := range forbidden {
			if d == f || strings.HasPrefix(d, f+"/") || (strings.HasSuffix(f, "/") && strings.HasPrefix(d, f)) {
				bad = append(bad, d+" (forbidden: "+f+")")
				break
			}
		}
	}
	return bad
}

// TestViolationsMatcher pins the prefix matcher itself, so that the boundary
// tests below can fail: a forbidden package is caught, a sibling with a
// similar name is not.
func TestViolationsMatcher(t *testing.T) {
	deps := []string{
		"fmt",
		module + "/vault",
		module + "/gatekeeper-lookalike",
		module + "/gate",
		module + "/gate/audit",
		module + "/vault/repo",
		"github.com/go-git/go-git/v5/plumbing",
		"github.com/zricethezav/gitleaks/v8/detect",
		"github.com/containerd/containerd/v2/client",
		"github.com/opencontainers/runc/libcontainer",
	}
	got := violations(deps, launcherForbidden)
	want := 7
	if len(got) != want {
		t.Fatalf("violations matched %d packages, want %d: %q", len(got), want, got)
	}
	for _, g := range got {
		if strings.HasPrefix(g, "fmt ") || strings.HasPrefix(g, module+"/vault ") || strings.Contains(g, "lookalike") {
			t.Errorf("violations flagged an allowed package: %s", g)
		}
	}
}

// TestLauncherImportBoundary: cmd/fedmem-run must not link go-git, gitleaks,
// the gate, vault/repo, containerd or runc.
func TestLauncherImportBoundary(t *testing.T) {
	root := moduleRoot(t)
	deps := goListDeps(t, root, "./cmd/fedmem-run")
	// Positive control: go list really listed the launcher's graph.
	if !contains(deps, module+"/cmd/fedmem-run") {
		t.Fatalf("go list -deps ./cmd/fedmem-run did not list the command itself; got %d packages", len(deps))
	}
	if bad := violations(deps, launcherForbidden); len(bad) > 0 {
		t.Errorf("cmd/fedmem-run links packages across the trust boundary (find the path with `go mod why -m` or `go list -deps -f '{{.ImportPath}}: {{.Imports}}' ./cmd/fedmem-run`):\n  %s",
			strings.Join(bad, "\n  "))
	}
}

// TestGateImportBoundary: the gate packages must not link any sandbox backend.
func TestGateImportBoundary(t *testing.T) {
	root := moduleRoot(t)
	if !hasGoFiles(filepath.Join(root, "gate")) {
		t.Skip("gate/ has no Go packages yet: nothing to check")
	}
	deps := goListDeps(t, root, "./gate/...")
	if !containsPrefix(deps, module+"/gate") {
		t.Fatalf("go list -deps ./gate/... listed no gate package; got %d packages", len(deps))
	}
	if bad := violations(deps, gateForbidden); len(bad) > 0 {
		t.Errorf("gate links sandbox code:\n  %s", strings.Join(bad, "\n  "))
	}
}

// adminAllowed are the sandbox packages cmd/fedmem may link:
//   - the seccomp rules, which `fedmem render k8s|seccomp` turns into a
//     Kubernetes seccomp profile (profiles/k8s) so the rules stay one list.
//     It holds the rules as data, their BPF assembly and the filter's
//     installer (a prctl on the calling process), no namespace, mount or
//     backend code;
//   - the session control protocol (`fedmem net allow` is its client; the
//     server runs in fedmem-run): a unix socket, SO_PEERCRED and JSON.
//   - the probe's wire type (`fedmem doctor` decodes what `fedmem-run
//     --probe --json` writes): types only.
//
// Each links no other fedmem package: TestAdminPackagesStandAlone keeps it
// so. The gate packages themselves still may not link them
// (TestGateImportBoundary).
var adminAllowed = []string{module + "/sandbox/seccomp", module + "/sandbox/netctl", module + "/sandbox/probe"}

// TestAdminImportBoundary: cmd/fedmem hosts the gate (`fedmem gate run`), so
// it must not link sandbox backends either; `fedmem run` reaches the sandbox
// by executing fedmem-run.
func TestAdminImportBoundary(t *testing.T) {
	root := moduleRoot(t)
	deps := goListDeps(t, root, "./cmd/fedmem")
	if !contains(deps, module+"/cmd/fedmem") {
		t.Fatalf("go list -deps ./cmd/fedmem did not list the command itself; got %d packages", len(deps))
	}
	var checked []string
	for _, d := range deps {
		if !contains(adminAllowed, d) {
			checked = append(checked, d)
		}
	}
	if bad := violations(checked, gateForbidden); len(bad) > 0 {
		t.Errorf("cmd/fedmem (the gate's process) links sandbox code:\n  %s", strings.Join(bad, "\n  "))
	}
}

// TestResolveIsShared: fedmem-run, its --explain and `fedmem profile
// explain` take one path — profiles/resolve — and that package stays free of
// the sandbox backends so that cmd/fedmem (the gate's process) may link it;
// the launcher's lifecycle (sandbox/launch) is linked by fedmem-run only.
func TestResolveIsShared(t *testing.T) {
	root := moduleRoot(t)
	resolveDeps := goListDeps(t, root, "./profiles/resolve")
	if !contains(resolveDeps, module+"/profiles/resolve") {
		t.Fatalf("go list -deps ./profiles/resolve did not list the package itself")
	}
	if bad := violations(resolveDeps, append(append([]string{}, gateForbidden...), launcherForbidden...)); len(bad) > 0 {
		t.Errorf("profiles/resolve (linked by cmd/fedmem and fedmem-run) links:\n  %s", strings.Join(bad, "\n  "))
	}
	for _, c := range []struct{ cmd, want string }{
		{"./cmd/fedmem", module + "/profiles/resolve"},
		{"./cmd/fedmem-run", module + "/profiles/resolve"},
		{"./cmd/fedmem-run", module + "/sandbox/launch"},
	} {
		if !contains(goListDeps(t, root, c.cmd), c.want) {
			t.Errorf("%s does not link %s: explain and run must share one resolution", c.cmd, c.want)
		}
	}
}

// TestAdminPackagesStandAlone: the sandbox packages cmd/fedmem may link
// (adminAllowed) link no other fedmem package, so no backend or namespace
// code can reach cmd/fedmem through them.
func TestAdminPackagesStandAlone(t *testing.T) {
	root := moduleRoot(t)
	for _, pkg := range adminAllowed {
		rel := "./" + strings.TrimPrefix(pkg, module+"/")
		deps := goListDeps(t, root, rel)
		if !contains(deps, pkg) {
			t.Fatalf("go list -deps %s did not list the package itself; got %d packages", rel, len(deps))
		}
		for _, d := range deps {
			if strings.HasPrefix(d, module+"/") && d != pkg {
				t.Errorf("%s links %s: cmd/fedmem may link it only while it stands alone (see adminAllowed)", rel, d)
			}
		}
	}
}

// TestLauncherBinary checks the built bin/fedmem-run (when FEDMEM_BIN names
// the build directory, as `make test` does): pure Go (CGO_ENABLED=0, which
// AllThreadsSyscall needs) and none of the forbidden modules in its build
// info.
func TestLauncherBinary(t *testing.T) {
	dir := os.Getenv("FEDMEM_BIN")
	if dir == "" {
		t.Skip("FEDMEM_BIN not set (make test sets it); the import graph is still checked by TestLauncherImportBoundary")
	}
	bin := filepath.Join(dir, "fedmem-run")
	out, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m %s: %v\n%s", bin, err, out)
	}
	info := string(out)
	if !strings.Contains(info, "CGO_ENABLED=0") {
		t.Errorf("%s was not built with CGO_ENABLED=0:\n%s", bin, info)
	}
	var mods []string
	for _, line := range strings.Split(info, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && (f[0] == "dep" || f[0] == "=>") {
			mods = append(mods, f[1]+"/")
		}
	}
	if bad := violations(mods, launcherForbidden); len(bad) > 0 {
		t.Errorf("%s embeds forbidden modules:\n  %s", bin, strings.Join(bad, "\n  "))
	}
}

// TestEveryPackageHasDoc: every package directory of the module has a package
// doc comment ("Package name …", or any comment for a command), so that each
// package states what it promises.
func TestEveryPackageHasDoc(t *testing.T) {
	root := moduleRoot(t)
	type pkg struct {
		name string
		doc  string
	}
	pkgs := map[string]*pkg{} // dir -> package
	err := walkGoSources(root, nil, func(path string) error {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Errorf("%s: %v", rel(root, path), err)
			return nil
		}
		dir := filepath.Dir(path)
		p := pkgs[dir]
		if p == nil {
			p = &pkg{name: f.Name.Name}
			pkgs[dir] = p
		}
		if f.Doc != nil && p.doc == "" {
			p.doc = f.Doc.Text()
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	if len(pkgs) == 0 {
		t.Fatalf("found no Go package under %s", root)
	}
	dirs := make([]string, 0, len(pkgs))
	for d := range pkgs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		p := pkgs[d]
		switch {
		case strings.TrimSpace(p.doc) == "":
			t.Errorf("%s: package %s has no doc comment (add a doc.go saying what the package promises)", rel(root, d), p.name)
		case p.name != "main" && !strings.HasPrefix(p.doc, "Package "+p.name+" "):
			t.Errorf("%s: package %s doc comment should start with %q, got %q", rel(root, d), p.name, "Package "+p.name+" ", firstLine(p.doc))
		}
	}
}

func rel(root, path string) string {
	if r, err := filepath.Rel(root, path); err == nil {
		return r
	}
	return path
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func containsPrefix(list []string, p string) bool {
	for _, x := range list {
		if x == p || strings.HasPrefix(x, p+"/") {
			return true
		}
	}
	return false
}

// hasGoFiles reports whether dir or any directory beneath it holds a
// non-test .go file.
func hasGoFiles(dir string) bool {
	found := false
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || found {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			found = true
		}
		return nil
	})
	return found
}
