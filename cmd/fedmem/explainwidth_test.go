package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/fedmem/fedmem/test/testutil"
)

// TestExplainWidth: `fedmem profile explain` and `fedmem-run --explain`
// fold their text to 100 columns when stdout is not a terminal (issue 23:
// credential lines reached 370 columns, the mount table its longest path
// plus its longest reason). The vault and workdir sit under long paths.
// --json is not folded.
func TestExplainWidth(t *testing.T) {
	bins := testutil.Binaries(t)
	long := filepath.Join(testutil.TempDir(t), strings.Repeat("a-rather-long-folder-name/", 3))
	v, wd, home := filepath.Join(long, "vault"), filepath.Join(long, "work"), filepath.Join(long, "home")
	if code, _, errOut := runFedmem("init", v); code != 0 {
		t.Fatalf("init: %s", errOut)
	}
	for _, d := range []string{wd, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name       string
		argv, json []string
	}{
		{"profile explain", []string{bins.Fedmem, "profile", "explain", "claude", "--vault", v, "--workdir", wd},
			[]string{bins.Fedmem, "profile", "explain", "claude", "--vault", v, "--workdir", wd, "--json"}},
		{"fedmem-run --explain", []string{bins.FedmemRun, "--vault", v, "--workdir", wd, "--profile", "claude", "--explain", "--", "true"},
			[]string{bins.FedmemRun, "--vault", v, "--workdir", wd, "--profile", "claude", "--explain", "--json", "--", "true"}},
	} {
		cmd := exec.Command(c.argv[0], c.argv[1:]...)
		cmd.Dir = wd
		cmd.Env = append(os.Environ(), "HOME="+home, "FEDMEM_VAULT=")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v\n%s", c.name, err, out)
		}
		if !strings.Contains(string(out), "KIND") || !strings.Contains(string(out), "credential claude-oauth-refresh:") {
			t.Fatalf("%s: not explain's text:\n%s", c.name, out)
		}
		for i, l := range strings.Split(string(out), "\n") {
			if n := utf8.RuneCountInString(l); n > 100 {
				t.Errorf("%s: line %d is %d columns wide (at most 100 when not a terminal): %q", c.name, i+1, n, l)
			}
		}
		cmd = exec.Command(c.json[0], c.json[1:]...)
		cmd.Dir = wd
		cmd.Env = append(os.Environ(), "HOME="+home, "FEDMEM_VAULT=")
		js, err := cmd.Output()
		if err != nil || !strings.HasPrefix(strings.TrimSpace(string(js)), "{") {
			t.Errorf("%s --json: %v\n%.300s", c.name, err, js)
		}
	}
}
