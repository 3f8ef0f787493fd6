package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/profiles"
	"github.com/fedmem/fedmem/test/testutil"
)

// runBin runs a built binary and returns its exit code and output.
func runBin(t *testing.T, bin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %v: %v", bin, args, err)
	}
	return code, o.String(), e.String()
}

func TestProfileListShow(t *testing.T) {
	bin := testutil.Binaries(t).Fedmem
	code, out, errOut := runBin(t, bin, "profile", "list", "--json")
	if code != 0 {
		t.Fatalf("list: code %d: %s", code, errOut)
	}
	var list []profileListEntry
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("list --json: %v\n%s", err, out)
	}
	var names []string
	for _, e := range list {
		names = append(names, e.Name)
		if e.Description == "" {
			t.Errorf("built-in %s has no description", e.Name)
		}
	}
	if strings.Join(names, ",") != strings.Join(profiles.Builtins(), ",") {
		t.Errorf("list names %v, want %v", names, profiles.Builtins())
	}

	// show resolves extends: claude inherits default's env and require.
	code, out, errOut = runBin(t, bin, "profile", "show", "--json", "claude")
	if code != 0 {
		t.Fatalf("show: code %d: %s", code, errOut)
	}
	var shown struct {
		Profile profiles.Profile `json:"profile"`
		Hash    string           `json:"profile_hash"`
	}
	if err := json.Unmarshal([]byte(out), &shown); err != nil {
		t.Fatalf("show --json: %v\n%s", err, out)
	}
	p := shown.Profile
	if p.Name != "claude" || len(shown.Hash) != 64 || !contains(p.Env.Pass, "PATH") || !contains(p.Env.Pass, "ANTHROPIC_*") || !contains(p.Require, "seccomp") || p.Home.Mode != "allowlist" {
		t.Errorf("show claude: %+v", shown)
	}
	code, out, _ = runBin(t, bin, "profile", "show", "strict")
	if code != 0 || !strings.Contains(out, "network:\n  mode: none\n  preset: default\n") || !strings.Contains(out, "mode: hidden") {
		t.Errorf("show strict (YAML): code %d\n%s", code, out)
	}
	code, _, errOut = runBin(t, bin, "profile", "show", "no-such-profile")
	if code != 1 || !strings.Contains(errOut, `unknown profile "no-such-profile"`) {
		t.Errorf("show unknown: code %d, stderr %q", code, errOut)
	}
}

func TestProfileCheck(t *testing.T) {
	bin := testutil.Binaries(t).Fedmem
	td := filepath.Join("..", "..", "profiles", "testdata")
	for _, tc := range []struct {
		file   string
		code   int
		errs   []string
		warns  []string
		stderr string
	}{
		{file: "valid.yaml"},
		{file: "writable_etc_inside.yaml", code: 1, errs: []string{`writable_etc_inside.yaml:3: writable[0] "/etc/cron.d" lies inside the system directory /etc`}},
		{file: "unknown_key.yaml", code: 1, errs: []string{`unknown_key.yaml:5: unknown key "home.writeable" (did you mean "writable"?)`}},
		{file: "home_writable_secret.yaml", code: 1, errs: []string{`home.writable ".ssh/" overlaps the secret path ~/.ssh`}},
		{file: "host_secret_env.yaml", warns: []string{"network: host shares the host's network", "network: host with env.pass DEPLOY_TOKEN, DB_PASSWORD, AWS_*"}},
	} {
		code, out, errOut := runBin(t, bin, "profile", "check", "--json", filepath.Join(td, tc.file))
		var res checkResult
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatalf("%s: --json: %v\n%s", tc.file, err, out)
		}
		if code != tc.code || res.Valid != (tc.code == 0) || len(res.Errors) != len(tc.errs) || len(res.Warnings) != len(tc.warns) {
			t.Errorf("%s: code %d, result %+v, stderr %q", tc.file, code, res, errOut)
			continue
		}
		for i, e := range tc.errs {
			if !strings.Contains(res.Errors[i], e) {
				t.Errorf("%s: error %q lacks %q", tc.file, res.Errors[i], e)
			}
		}
		for i, w := range tc.warns {
			if !strings.Contains(res.Warnings[i], w) {
				t.Errorf("%s: warning %q lacks %q", tc.file, res.Warnings[i], w)
			}
		}
	}
	// Human output: warnings on stderr, exit 0; errors on stderr, exit 1.
	code, out, errOut := runBin(t, bin, "profile", "check", filepath.Join(td, "host_secret_env.yaml"))
	if code != 0 || !strings.Contains(out, "ok (2 warnings)") || !strings.Contains(errOut, "fedmem: warning: network: host with env.pass") {
		t.Errorf("check host_secret_env: code %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = runBin(t, bin, "profile", "check", filepath.Join(td, "writable_root.yaml"))
	if code != 1 || !strings.Contains(errOut, `writable[0] "/" is the whole of /: writable paths must be specific`) {
		t.Errorf("check writable_root: code %d, stderr %q", code, errOut)
	}
}

func TestProfileExplain(t *testing.T) {
	bin := testutil.Binaries(t).Fedmem
	dir := testutil.TempDir(t)
	v := filepath.Join(dir, "vault")
	if code, _, errOut := runFedmem("init", v); code != 0 {
		t.Fatalf("init: %s", errOut)
	}
	wd := filepath.Join(dir, "work")
	home := filepath.Join(dir, "home")
	for _, d := range []string{wd, filepath.Join(home, ".ssh")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	explain := func(args ...string) (bool, mounts.Plan) {
		cmd := exec.Command(bin, append([]string{"profile", "explain", "--json", "--workdir", wd}, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+home, "FEDMEM_VAULT=")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("explain %v: %v", args, err)
		}
		var res struct {
			Placeholder bool        `json:"placeholder_vault"`
			Plan        mounts.Plan `json:"plan"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("explain --json: %v\n%s", err, out)
		}
		return res.Placeholder, res.Plan
	}
	ph, pl := explain("claude", "--vault", v)
	if ph || pl.Vault != v || pl.Workdir != wd || pl.Home != home || pl.Network != "public" {
		t.Errorf("plan header: placeholder %v, %+v", ph, pl)
	}
	want := map[string]mounts.Kind{
		v: mounts.BindRO, wd: mounts.BindRW, filepath.Join(home, ".claude"): mounts.BindRW,
		home: mounts.Hidden, filepath.Join(v, "90-inbox", explainSession): mounts.BindRW,
	}
	got := map[string]mounts.Kind{}
	for _, m := range pl.Mounts {
		got[m.Target] = m.Kind
	}
	for target, kind := range want {
		if got[target] != kind {
			t.Errorf("mount %s: kind %q, want %q (plan %+v)", target, got[target], kind, pl.Mounts)
		}
	}
	// The home is an allow-list (issue 22): ~/.ssh is not masked, it does
	// not exist inside — no mount names it.
	if _, ok := got[filepath.Join(home, ".ssh")]; ok {
		t.Errorf("a mount for ~/.ssh under the allow-list home: %+v", pl.Mounts)
	}
	if _, ok := got[filepath.Join(home, ".aws")]; ok {
		t.Errorf("a mask for the absent ~/.aws: %+v", pl.Mounts)
	}
	ph, pl = explain("strict")
	if !ph || pl.Vault != placeholderVault || pl.Network != "none" {
		t.Errorf("strict without vault: placeholder %v, vault %s, network %s", ph, pl.Vault, pl.Network)
	}
	// The table names the placeholder.
	cmd := exec.Command(bin, "profile", "explain", "default", "--workdir", wd)
	cmd.Env = append(os.Environ(), "HOME="+home, "FEDMEM_VAULT=")
	out, err := cmd.Output()
	if err != nil || !strings.Contains(string(out), "no --vault given; /path/to/vault stands for the vault") || !strings.Contains(string(out), "KIND") {
		t.Errorf("explain table: %v\n%s", err, out)
	}
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// TestProfileAllow: `fedmem profile allow FILE` shows the file and its
// sha256 and records the hash in ~/.config/fedmem/allowed-profiles;
// `profile explain` of a project profile warns until it is allowed; a file
// that is not a valid profile is not allowed.
func TestProfileAllow(t *testing.T) {
	bin := testutil.Binaries(t).Fedmem
	root := t.TempDir()
	home, work := filepath.Join(root, "home"), filepath.Join(root, "work")
	dir := filepath.Join(work, ".fedmem", "profiles")
	for _, d := range []string{home, dir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{root, home, work, filepath.Dir(dir), dir} {
		os.Chmod(d, 0o755)
	}
	p := filepath.Join(dir, "proj.yaml")
	os.WriteFile(p, []byte("name: proj\nextends: default\n"), 0o644)
	run := func(args ...string) (int, string, string) {
		cmd := exec.Command(bin, args...)
		cmd.Dir, cmd.Env = work, []string{"HOME=" + home, "PATH=/usr/bin:/bin"}
		var o, e strings.Builder
		cmd.Stdout, cmd.Stderr = &o, &e
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), o.String(), e.String()
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, o.String(), e.String()
	}
	_, hash, err := profiles.HashFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := run("profile", "explain", "proj", "--workdir", work); code != 0 || !strings.Contains(out+errOut, "has not been allowed") || !strings.Contains(out+errOut, hash) {
		t.Errorf("explain before allow: exit %d, want a warning naming the hash\n%s%s", code, out, errOut)
	}
	code, out, errOut := run("profile", "allow", p)
	if code != 0 || !strings.Contains(out, p) || !strings.Contains(out, hash) {
		t.Fatalf("allow: exit %d\n%s%s", code, out, errOut)
	}
	if b, _ := os.ReadFile(profiles.AllowStore(home)); !strings.Contains(string(b), hash+"  "+p) {
		t.Errorf("store: %q", b)
	}
	if code, out, errOut := run("profile", "explain", "proj", "--workdir", work); code != 0 || strings.Contains(out+errOut, "has not been allowed") {
		t.Errorf("explain after allow: exit %d\n%s%s", code, out, errOut)
	}
	bad := filepath.Join(work, "bad.yaml")
	os.WriteFile(bad, []byte("name: bad\nnetwrok: none\n"), 0o644)
	if code, _, errOut := run("profile", "allow", bad); code != 1 || !strings.Contains(errOut, bad) || !strings.Contains(errOut, "netwrok") {
		t.Errorf("allow an invalid file: exit %d, %s", code, errOut)
	}
}
