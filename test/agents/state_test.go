package agents

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fedmem/fedmem/test/testutil"
)

// TestBuildsWorkUnderBuiltinProfiles runs the everyday builds of a
// workdir under the built-in profiles, offline: go build of a module
// without dependencies (the build cache in ~/.cache/go-build), npm install
// of a local tarball (through ~/.npm's cache) and python3 -m venv. They
// fail on a read-only home; the profiles' state makes them work, kept per
// profile: the user's own caches are never written.
func TestBuildsWorkUnderBuiltinProfiles(t *testing.T) {
	testutil.RequireRoot(t)
	goBin := need(t, "go")
	npm := need(t, "npm")
	bins := testutil.Binaries(t)
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		python = need(t, "python3")
	}
	for _, prof := range []string{"default", "claude", "codex", "ci"} {
		t.Run(prof, func(t *testing.T) {
			base := testutil.TempDir(t)
			v := testutil.NewVault(t, filepath.Join(base, "vault"), testutil.VaultOptions{Fedmem: bins.Fedmem})
			work, home := filepath.Join(base, "work"), filepath.Join(base, "home")
			writeTree(t, work, map[string]string{
				"go.mod":       "module example.com/hello\n\ngo 1.21\n",
				"main.go":      "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n",
				"package.json": `{"name":"app","version":"1.0.0","private":true}` + "\n",
			})
			writeTree(t, home, map[string]string{".cache/user-own": "the user's own cache\n"})
			writeTgz(t, filepath.Join(work, "dep-1.0.0.tgz"), map[string]string{
				"package/package.json": `{"name":"dep","version":"1.0.0","main":"index.js"}` + "\n",
				"package/index.js":     "module.exports = 'dep-ok';\n",
			})
			script := strings.Join([]string{
				"set -e",
				"date +%s.%N", "go build -o hello . && ./hello", "date +%s.%N",
				"npm install --offline --no-audit --no-fund --no-update-notifier ./dep-1.0.0.tgz >/dev/null && node -e 'console.log(require(\"dep\"))'",
				python + " -m venv venv && ./venv/bin/python -c 'import sys; print(\"venv\", sys.prefix != sys.base_prefix)'",
				"echo ALL-OK",
			}, "\n")
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bins.FedmemRun, "--vault", v.Dir, "--profile", prof, "--", "/bin/sh", "-c", script)
			cmd.Dir = work
			cmd.Env = []string{"HOME=" + home, "PATH=" + filepath.Dir(goBin) + ":" + filepath.Dir(npm) + ":/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8"}
			out, err := cmd.CombinedOutput()
			t.Logf("%s", out)
			if err != nil || !strings.Contains(string(out), "ALL-OK") {
				t.Fatalf("builds under %s failed: %v", prof, err)
			}
			for _, want := range []string{"hello", "dep-ok", "venv True"} {
				if !strings.Contains(string(out), want) {
					t.Fatalf("under %s: %q missing from the output", prof, want)
				}
			}
			// The caches are the profile's, on the host, and the user's own
			// ~/.cache was not written.
			store := filepath.Join(home, ".local/share/fedmem", prof)
			if fi, err := os.Stat(filepath.Join(store, ".cache", "go-build")); err != nil || !fi.IsDir() {
				t.Fatalf("no per-profile go build cache in %s: %v", store, err)
			}
			if ents, err := os.ReadDir(filepath.Join(store, ".npm")); err != nil || len(ents) == 0 {
				t.Fatalf("no per-profile npm cache in %s: %v", store, err)
			}
			ents, _ := os.ReadDir(filepath.Join(home, ".cache"))
			if len(ents) != 1 || ents[0].Name() != "user-own" {
				t.Fatalf("the user's own ~/.cache changed: %v", ents)
			}
		})
	}
}

func writeTgz(t *testing.T, p string, files map[string]string) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg, ModTime: time.Unix(1700000000, 0)}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	tw.Close()
	zw.Close()
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
