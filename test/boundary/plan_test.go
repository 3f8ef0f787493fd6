package boundary

import (
	"bytes"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// sessionLifecycle is the one package under sandbox/ that reads the profile
// schema: it resolves the profile, has the Plan built (mounts) and turns
// what the backends need into their own types (issue 20: backends realise a
// Plan).
const sessionLifecycle = module + "/sandbox/launch"

// goListImports returns, for every package matching pattern, its direct
// non-test imports, built as the Makefile builds the launcher (GOOS=linux)
// with cgo as given.
func goListImports(t *testing.T, root, cgo string, pattern ...string) map[string][]string {
	t.Helper()
	args := append([]string{"list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}"}, pattern...)
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo, "GOOS=linux")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 {
			imports[f[0]] = f[1:]
		}
	}
	return imports
}

// TestBackendsReadNoProfile: no package under sandbox/ but the session
// lifecycle (sandbox/launch) imports profiles or a package below it; the
// backends, the proxy and the OCI translation read the Plan (mounts) and
// their own types. Checked with cgo on and off, so that no cgo-only file
// hides an import.
func TestBackendsReadNoProfile(t *testing.T) {
	root := moduleRoot(t)
	forbidden := []string{module + "/profiles"}
	for _, cgo := range []string{"0", "1"} {
		imports := goListImports(t, root, cgo, "./sandbox/...")
		// Positive controls: the walk listed the backends, and it sees
		// the lifecycle's own import of profiles (so a backend's would be
		// seen the same way).
		for _, want := range []string{module + "/sandbox", module + "/sandbox/oci", module + "/sandbox/netproxy", module + "/sandbox/credentials", module + "/sandbox/propose", sessionLifecycle} {
			if _, ok := imports[want]; !ok {
				t.Fatalf("CGO_ENABLED=%s go list ./sandbox/... did not list %s; got %d packages", cgo, want, len(imports))
			}
		}
		if len(violations(imports[sessionLifecycle], forbidden)) == 0 {
			t.Fatalf("CGO_ENABLED=%s: %s imports no profiles package: the check below could not see one", cgo, sessionLifecycle)
		}
		pkgs := make([]string, 0, len(imports))
		for pkg := range imports {
			pkgs = append(pkgs, pkg)
		}
		sort.Strings(pkgs)
		for _, pkg := range pkgs {
			if pkg == sessionLifecycle {
				continue
			}
			if bad := violations(imports[pkg], forbidden); len(bad) > 0 {
				t.Errorf("CGO_ENABLED=%s: %s imports the profile schema (only %s may; give the backend a Plan field or its own type, built in mounts or sandbox/launch):\n  %s",
					cgo, pkg, sessionLifecycle, strings.Join(bad, "\n  "))
			}
		}
	}
}

// TestPlanReadsNoProfile: the Plan (mounts and the packages below it) is
// built from the profile's request (mounts/request, made by
// profiles.(*Profile).PlanRequest) and reads nothing of the profile
// schema: no non-test package under mounts/ imports profiles or a package
// below it (issue 20). Checked with cgo on and off.
func TestPlanReadsNoProfile(t *testing.T) {
	root := moduleRoot(t)
	forbidden := []string{module + "/profiles"}
	for _, cgo := range []string{"0", "1"} {
		imports := goListImports(t, root, cgo, "./mounts/...", "./profiles")
		// Positive controls: the walk listed the plan and its request, and
		// sees profiles' own import of the request (so a plan package's
		// import of profiles would be seen the same way).
		for _, want := range []string{module + "/mounts", module + "/mounts/request", module + "/mounts/families"} {
			if _, ok := imports[want]; !ok {
				t.Fatalf("CGO_ENABLED=%s go list ./mounts/... did not list %s; got %d packages", cgo, want, len(imports))
			}
		}
		if !contains(imports[module+"/profiles"], module+"/mounts/request") {
			t.Fatalf("CGO_ENABLED=%s: profiles does not import mounts/request: the check below could not see an import", cgo)
		}
		pkgs := make([]string, 0, len(imports))
		for pkg := range imports {
			if strings.HasPrefix(pkg, module+"/mounts") {
				pkgs = append(pkgs, pkg)
			}
		}
		sort.Strings(pkgs)
		for _, pkg := range pkgs {
			if bad := violations(imports[pkg], forbidden); len(bad) > 0 {
				t.Errorf("CGO_ENABLED=%s: %s imports the profile schema (the plan reads mounts/request; profiles.(*Profile).PlanRequest makes it):\n  %s",
					cgo, pkg, strings.Join(bad, "\n  "))
			}
		}
	}
}
