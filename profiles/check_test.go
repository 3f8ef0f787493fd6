package profiles

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestCheckFixtures loads each fixture in testdata/ the way `fedmem profile
// check` does and asserts exactly which rules fire, and why.
func TestCheckFixtures(t *testing.T) {
	for _, tc := range []struct {
		file    string
		loadErr string   // Load itself refuses the file
		errs    []string // one substring per expected error
		warns   []string // one substring per expected warning
	}{
		{file: "valid.yaml"},
		{file: "writable_root.yaml", errs: []string{`"/" is the whole of /`}},
		{file: "writable_etc_inside.yaml", errs: []string{`"/etc/cron.d" lies inside the system directory /etc`}},
		{file: "writable_contains_usr.yaml", errs: []string{`"/usr/" lies inside the system directory /usr`}},
		{file: "writable_system_parent.yaml", errs: []string{`"/var/" is the whole of /var`}},
		{file: "writable_home.yaml", errs: []string{`"/home" is the whole of /home`}},
		{file: "home_writable_secret.yaml", loadErr: `home.writable ".ssh/" overlaps the secret path ~/.ssh`},
		{file: "unknown_key.yaml", loadErr: `testdata/unknown_key.yaml`},
		{file: "host_secret_env.yaml", warns: []string{`network: host shares the host's network`, `network: host with env.pass DEPLOY_TOKEN, DB_PASSWORD, AWS_*`}},
		{file: "broad_home.yaml", warns: []string{`home.mode: ro shows the whole home read-only`, `home.writable ".local/bin/" is broad`, `home.writable ".bashrc" is broad`}},
		{file: "require_no_seccomp.yaml", warns: []string{`require does not list seccomp`}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			p, _, err := Load("testdata/" + tc.file)
			if tc.loadErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.loadErr) {
					t.Fatalf("Load: got %v, want an error containing %q", err, tc.loadErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			warns, errs := Check(p)
			match(t, "error", errStrings(errs), tc.errs)
			match(t, "warning", warns, tc.warns)
		})
	}
}

// match asserts got and want pair up one to one by substring.
func match(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d %ss, want %d:\n  %s", len(got), what, len(want), strings.Join(got, "\n  "))
		return
	}
	used := make([]bool, len(got))
	for _, w := range want {
		found := false
		for i, g := range got {
			if !used[i] && strings.Contains(g, w) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			t.Errorf("no %s contains %q; got:\n  %s", what, w, strings.Join(got, "\n  "))
		}
	}
}

func errStrings(errs []error) []string {
	var out []string
	for _, e := range errs {
		var j interface{ Unwrap() []error }
		if errors.As(e, &j) {
			out = append(out, errStrings(j.Unwrap())...)
			continue
		}
		out = append(out, e.Error())
	}
	return out
}

// TestCheckBuiltins: every built-in passes Check; the agents' profiles warn
// about their API keys on the public network, the neutral ones do not; no
// built-in uses the host network.
func TestCheckBuiltins(t *testing.T) {
	wantSecretWarn := map[string]bool{"claude": true, "codex": true, "aider": true}
	for _, n := range Builtins() {
		p, _, err := Load(n)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		warns, errs := Check(p)
		if len(errs) > 0 {
			t.Errorf("%s: %v", n, errs)
		}
		if p.Network == NetworkHost || strings.Contains(strings.Join(warns, "\n"), "network: host") {
			t.Errorf("%s: network: host in a built-in (warnings %q)", n, warns)
		}
		got := strings.Contains(strings.Join(warns, "\n"), "network: public with env.pass")
		if got != wantSecretWarn[n] {
			t.Errorf("%s: secret-env warning %v, want %v (warnings %q)", n, got, wantSecretWarn[n], warns)
		}
	}
}

func TestSecretLooking(t *testing.T) {
	for name, want := range map[string]bool{
		"OPENAI_API_KEY": true, "ANTHROPIC_*": true, "AWS_*": true, "GITHUB_*": true, "DEPLOY_TOKEN": true,
		"DB_PASSWORD": true, "MY_SECRET": true, "*": true, "A*": true, "npm_token": true,
		"PATH": false, "LC_*": false, "TERM": false, "HTTPS_PROXY": false, "CI": false, "RUNNER_*": false, "KEYBOARD": false,
	} {
		if got := SecretLooking(name); got != want {
			t.Errorf("SecretLooking(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestCheckWritableRules covers the writable rules on values no fixture has.
func TestCheckWritableRules(t *testing.T) {
	for w, want := range map[string]string{
		"/srv/build":       "",
		"/home/alice/proj": "",
		"/var/lib/docker":  "lies inside the system directory /var/lib",
		"/var":             "is the whole of /var",
		"/proc/sys":        "lies inside the system directory /proc",
		"/tmp":             "is the whole of /tmp",
		"/opt/..":          "is the whole of /",
		"/var/..//usr/..":  "is the whole of /",
	} {
		p := &Profile{Name: "t", Network: NetworkNone, Home: Home{Mode: "ro"}, TTY: "auto", Require: []string{"seccomp"}, Writable: []string{w}}
		_, errs := Check(p)
		got := fmt.Sprint(errs)
		if want == "" && len(errs) > 0 || want != "" && !strings.Contains(got, want) {
			t.Errorf("writable %s: errors %s, want %q", w, got, want)
		}
	}
}
