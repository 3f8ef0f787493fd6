package testutil

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Bins are the paths of the binaries an integration test runs.
type Bins struct {
	FedmemRun string // the launcher (bin/fedmem-run)
	Fedmem    string // the admin tool (bin/fedmem)
	Hostile   string // the hostile agent (test/hostile)
	// FedmemCred is the credential helper, beside FedmemRun.
	FedmemCred string
}

var (
	binOnce sync.Once
	bins    Bins
	binErr  error
	binDir  string
)

// Binaries returns the binaries, building them once per test process. With
// FEDMEM_BIN set (make test sets it to ./bin), fedmem-run and fedmem come
// from there; otherwise, and always for the hostile program, they are built
// with CGO_ENABLED=0 into a directory under TempBase that every user can
// read, so that the unprivileged-user layout can run them. Call Cleanup
// from TestMain to remove that directory.
func Binaries(t testing.TB) Bins {
	t.Helper()
	binOnce.Do(func() { bins, binErr = buildAll() })
	if binErr != nil {
		t.Fatalf("binaries: %v", binErr)
	}
	return bins
}

// Cleanup removes what Binaries built. Call it from TestMain after m.Run.
func Cleanup() {
	if binDir != "" {
		os.RemoveAll(binDir)
	}
}

// Main runs the tests and cleans up: use as os.Exit(testutil.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	Cleanup()
	return code
}

func buildAll() (Bins, error) {
	root, err := ModuleRoot()
	if err != nil {
		return Bins{}, err
	}
	removeStale()
	binDir = filepath.Join(TempBase(), fmt.Sprintf("fedmem-bin-%d", os.Getpid()))
	os.RemoveAll(binDir)
	if err := os.Mkdir(binDir, 0o755); err != nil {
		return Bins{}, err
	}
	if err := os.Chmod(binDir, 0o755); err != nil {
		return Bins{}, err
	}
	var b Bins
	from := os.Getenv("FEDMEM_BIN")
	pick := func(name, pkg string) (string, error) {
		if from != "" {
			p := filepath.Join(from, name)
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
				return p, nil
			}
		}
		return build(root, pkg, filepath.Join(binDir, name))
	}
	if b.FedmemRun, err = pick("fedmem-run", "./cmd/fedmem-run"); err != nil {
		return b, err
	}
	if b.Fedmem, err = pick("fedmem", "./cmd/fedmem"); err != nil {
		return b, err
	}
	// fedmem-run finds its credential helper beside itself (guarantee 8).
	if b.FedmemCred, err = pick("fedmem-cred", "./cmd/fedmem-cred"); err != nil {
		return b, err
	}
	if filepath.Dir(b.FedmemCred) != filepath.Dir(b.FedmemRun) {
		return b, fmt.Errorf("fedmem-cred (%s) is not beside fedmem-run (%s): build both into FEDMEM_BIN (make build)", b.FedmemCred, b.FedmemRun)
	}
	// Always the tree's own hostile program: it is part of the test.
	if b.Hostile, err = build(root, "./test/hostile", filepath.Join(binDir, "hostile")); err != nil {
		return b, err
	}
	return b, nil
}

// removeStale deletes build directories of test processes that have ended
// without calling Cleanup (packages without a TestMain).
func removeStale() {
	ms, _ := filepath.Glob(filepath.Join(TempBase(), "fedmem-bin-*"))
	for _, m := range ms {
		pid, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(m), "fedmem-bin-"))
		if err != nil || pid <= 0 {
			continue
		}
		fi, err := os.Stat(m)
		if err != nil || time.Since(fi.ModTime()) < time.Hour {
			continue // maybe still in use by a running test
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
			os.RemoveAll(m)
		}
	}
}

func build(root, pkg, out string) (string, error) {
	goBin := "go"
	if _, err := exec.LookPath(goBin); err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	cmd := exec.Command(goBin, "build", "-trimpath", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, b)
	}
	if err := os.Chmod(out, 0o755); err != nil {
		return "", err
	}
	return out, nil
}

// ModuleRoot finds the directory holding go.mod, walking up from the
// current directory (go test runs in the package directory).
func ModuleRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		p := filepath.Dir(d)
		if p == d {
			return "", errors.New("go.mod not found above the working directory")
		}
		d = p
	}
}
