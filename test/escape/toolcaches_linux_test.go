package escape

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestToolCachesAreState: everyday builds work inside the default
// profile: `go mod download` of a module not yet cached (from a local
// GOPROXY directory, no network) fills the module cache, and Go's checksum
// database cache (~/go/pkg/sumdb, which `go get` and `go mod tidy` write
// before anything else: "open ~/go/pkg/sumdb/sum.golang.org/latest: no such
// file or directory" when it is not writable) takes a write; so do the
// caches of npm, pip and cargo. Every write lands in the profile's state
// under ~/.local/share/fedmem/default/, never in the user's own home.
func TestToolCachesAreState(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("FEDMEM_REQUIRE_ROOT") == "1" {
			t.Fatal("go is needed in PATH for this test")
		}
		t.Skip("go not in PATH")
	}
	e := setup(t, layout{name: "beside/root"})
	// A module in GOPROXY's file layout: @v/list, .info, .mod, .zip.
	proxy := filepath.Join(e.outDir, "goproxy")
	mod := "example.invalid/fedmemtest"
	vdir := filepath.Join(proxy, mod, "@v")
	must(t, os.MkdirAll(vdir, 0o755))
	src := filepath.Join(e.outDir, "modsrc")
	must(t, os.MkdirAll(src, 0o755))
	must(t, os.WriteFile(filepath.Join(src, "go.mod"), []byte("module "+mod+"\n\ngo 1.21\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(src, "f.go"), []byte("package fedmemtest\n\nconst X = 1\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(vdir, "list"), []byte("v1.0.0\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(vdir, "v1.0.0.info"), []byte(`{"Version":"v1.0.0","Time":"2026-01-01T00:00:00Z"}`), 0o644))
	must(t, os.WriteFile(filepath.Join(vdir, "v1.0.0.mod"), []byte("module "+mod+"\n\ngo 1.21\n"), 0o644))
	zip := exec.Command("sh", "-c", `cd "$1" && mkdir -p "z/$2@v1.0.0" && cp go.mod f.go "z/$2@v1.0.0/" && cd z && python3 -c 'import sys,zipfile,os
z=zipfile.ZipFile(sys.argv[1],"w")
for r,_,fs in os.walk("."):
  for f in fs: z.write(os.path.join(r,f), os.path.relpath(os.path.join(r,f),"."))' "$3"`, "sh", src, mod, filepath.Join(vdir, "v1.0.0.zip"))
	if out, err := zip.CombinedOutput(); err != nil {
		t.Fatalf("module zip: %v\n%s", err, out)
	}
	proj := filepath.Join(e.workdir, "proj")
	must(t, os.MkdirAll(proj, 0o755))
	must(t, os.WriteFile(filepath.Join(proj, "go.mod"), []byte("module proj\n\ngo 1.21\n\nrequire "+mod+" v1.0.0\n"), 0o644))
	script := `set -e
cd proj
export GOPROXY=file://` + proxy + ` GONOSUMDB=example.invalid GOFLAGS=-mod=mod GOTOOLCHAIN=local GOTELEMETRY=off
go mod download ` + mod + `
echo "MODCACHE=$(go env GOMODCACHE)"
ls "$(go env GOMODCACHE)/` + mod + `@v1.0.0/f.go"
sumdb="$(go env GOPATH)/pkg/sumdb/sum.golang.org"
mkdir -p "$sumdb" && echo 'go.sum database tree' > "$sumdb/latest" && echo SUMDB-OK
mkdir -p ~/.npm/_cacache && echo x > ~/.npm/_cacache/probe && echo NPM-OK
mkdir -p ~/.cache/pip && echo x > ~/.cache/pip/probe && echo PIP-OK
mkdir -p ~/.cargo/registry/cache && echo x > ~/.cargo/registry/cache/probe && echo CARGO-OK
`
	r := e.run(t, []string{"--profile", "default"}, "env", "PATH="+filepath.Dir(goBin)+":/usr/local/bin:/usr/bin:/bin", "sh", "-c", script)
	out := string(r.stdout)
	for _, want := range []string{"SUMDB-OK", "NPM-OK", "PIP-OK", "CARGO-OK"} {
		if !strings.Contains(out, want) {
			t.Errorf("%s missing: exit %d\nstdout:\n%s\nstderr:\n%s", want, r.code, out, r.stderr)
		}
	}
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, out, r.stderr)
	}
	state := filepath.Join(e.home, ".local/share/fedmem/default")
	for _, p := range []string{"go/pkg/sumdb/sum.golang.org/latest", "go/pkg/mod/" + mod + "@v1.0.0/f.go", ".npm/_cacache/probe", ".cache/pip/probe", ".cargo/registry/cache/probe"} {
		if _, err := os.Stat(filepath.Join(state, p)); err != nil {
			t.Errorf("%s is not in the profile's state: %v", p, err)
		}
		if _, err := os.Lstat(filepath.Join(e.home, p)); err == nil {
			if fi, _ := os.Stat(filepath.Join(e.home, p)); fi != nil && !fi.IsDir() {
				t.Errorf("%s reached the user's own home", filepath.Join(e.home, p))
			}
		}
	}
}
