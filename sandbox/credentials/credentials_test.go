package launch

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/fedmem/fedmem/profiles"
)

// TestPlaceholderShape: a placeholder keeps the vendor prefix, the length
// and the class of every character (clients check a key's shape), differs
// from the real value, and a JWT keeps its header and claims.
func TestPlaceholderShape(t *testing.T) {
	for _, real := range []string{"sk-ant-api03-abcDEF0123456789xyzXYZ_-abcdef", "sk-proj-ABCDEFabcdef0123456789", "ghp_0123456789abcdefABCDEF0123456789ab",
		"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1c2VyIiwiZXhwIjoxfQ.c2lnbmF0dXJlc2lnbmF0dXJlc2lnbmF0dXJl"} {
		ph, err := placeholderFor(real, 0)
		if err != nil {
			t.Fatal(err)
		}
		if ph == real || len(ph) != len(real) {
			t.Errorf("%s → %s: same or another length", real, ph)
		}
		for i := range real {
			class := func(c byte) int {
				switch {
				case c >= 'a' && c <= 'z':
					return 1
				case c >= 'A' && c <= 'Z':
					return 2
				case c >= '0' && c <= '9':
					return 3
				}
				return int(c) + 10
			}
			if class(real[i]) != class(ph[i]) {
				t.Errorf("%s → %s: character %d changed class", real, ph, i)
				break
			}
		}
		want := map[string]string{"sk-ant": "sk-ant-api03-", "sk-proj": "sk-proj-", "ghp_": "ghp_", "eyJ": "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1c2VyIiwiZXhwIjoxfQ."}
		for k, pre := range want {
			if strings.HasPrefix(real, k) && !strings.HasPrefix(ph, pre) {
				t.Errorf("%s → %s: prefix %q not kept", real, ph, pre)
			}
		}
	}
	if _, err := placeholderFor("sk-ant-api03-abc", 0); err == nil {
		t.Errorf("a value with 3 random characters got a placeholder")
	}
	// Claude Code recognises an approved key by its last 20 characters.
	real := "sk-ant-api03-" + strings.Repeat("aB3", 30) + "-suffixOf20charsXYZ9"
	ph, err := placeholderFor(real, 20)
	if err != nil || ph[len(ph)-20:] != real[len(real)-20:] || ph == real || !strings.HasPrefix(ph, "sk-ant-api03-") {
		t.Errorf("keep_suffix 20: %s → %s (%v)", real, ph, err)
	}
	if _, err := placeholderFor("sk-ant-api03-0123456789abcdefghijklmnop", 20); err == nil {
		t.Errorf("keep_suffix 20 of a value with 6 other characters got a placeholder")
	}
}

// TestReadCredentialsRefuses: a missing (not optional), unreadable or
// malformed source is an error naming the profile's file and line; a
// missing optional one is skipped.
func TestReadCredentialsRefuses(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "bad.json"), []byte("{not json"), 0o600)
	os.WriteFile(filepath.Join(home, "ok.json"), []byte(`{"a": {"b": "tok_0123456789abcdefghij", "n": 5}}`), 0o600)
	os.Mkdir(filepath.Join(home, "dir.json"), 0o700)
	os.WriteFile(filepath.Join(home, "ok.yaml"), []byte("a:\n  b: tok_yaml_0123456789abcdefghij # a comment\n  n: 5\n"), 0o600)
	os.WriteFile(filepath.Join(home, "bad.yml"), []byte("a: [unclosed\n"), 0o600)
	os.WriteFile(filepath.Join(home, "unreadable.json"), []byte(`{"a": "tok_0123456789abcdefghij"}`), 0o000)
	sh := func(script string) []string { return []string{"/bin/sh", "-c", script} }
	cases := []struct {
		c    profiles.Credential
		want string // "" = skipped
	}{
		{profiles.Credential{Env: "NOPE"}, "environment variable NOPE is not set"},
		{profiles.Credential{Env: "NOPE", Optional: true}, ""},
		{profiles.Credential{Env: "SHORT"}, "shorter than 8"},
		{profiles.Credential{Env: "SPACE"}, "outside printable ASCII"},
		{profiles.Credential{File: "~/missing.json", Path: "a"}, "no such file"},
		{profiles.Credential{File: "~/missing.json", Path: "a", Optional: true}, ""},
		{profiles.Credential{File: "~/bad.json", Path: "a", Optional: true}, "is not JSON"},
		{profiles.Credential{File: "~/dir.json", Path: "a", Optional: true}, "not a regular file"},
		{profiles.Credential{File: "~/ok.json", Path: "a.c"}, "no a.c in it"},
		{profiles.Credential{File: "~/ok.json", Path: "a.c", Optional: true}, ""},
		{profiles.Credential{File: "~/ok.json", Path: "a.n"}, "a.n is not a string"},
		{profiles.Credential{File: "~/ok.json", Path: "a.b.c"}, "not an object"},
		// YAML files, by their name.
		{profiles.Credential{File: "~/ok.yaml", Path: "a.n"}, "a.n is not a string"},
		{profiles.Credential{File: "~/ok.yaml", Path: "a.c"}, "no a.c in it"},
		{profiles.Credential{File: "~/bad.yml", Path: "a", Optional: true}, "is not YAML"},
		// Command sources: a failure, a timeout, garbage.
		{profiles.Credential{Command: sh("echo locked >&2; exit 3")}, "exit status 3 (stderr: locked)"},
		{profiles.Credential{Command: sh("exit 1"), Optional: true}, ""},
		{profiles.Credential{Command: sh("echo partial; exit 1"), Optional: true}, "exit status 1"},
		{profiles.Credential{Command: []string{"/nonexistent/secret-tool", "lookup"}}, "no such file"},
		{profiles.Credential{Command: []string{"/nonexistent/secret-tool", "lookup"}, Optional: true}, ""},
		{profiles.Credential{Command: sh("printf 'two\nlines-0123456789'")}, "outside printable ASCII"},
		{profiles.Credential{Command: sh("")}, "printed nothing"},
		{profiles.Credential{Command: sh("exec sleep 60")}, "did not answer within 10s"},
	}
	if os.Geteuid() != 0 { // root reads a 0000 file
		cases = append(cases, struct {
			c    profiles.Credential
			want string
		}{profiles.Credential{File: "~/unreadable.json", Path: "a", Optional: true}, "permission denied"})
	}
	environ := []string{"SHORT=abc", "SPACE=abcdefgh ijklmnop"}
	for _, tc := range cases {
		tc.c.Name, tc.c.Where = "k", "p.yaml:7"
		p := &profiles.Profile{Credentials: []profiles.Credential{tc.c}}
		got, err := readCredentials(p, environ, home)
		switch {
		case tc.want == "" && (err != nil || len(got) != 0):
			t.Errorf("%+v: %v %v, want skipped", tc.c, got, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), `p.yaml:7: credential "k": `)):
			t.Errorf("%+v: %v, want p.yaml:7 … %q", tc.c, err, tc.want)
		}
		if err != nil && StageOf(err, "") != StageCredentials {
			t.Errorf("%+v: stage %q", tc.c, StageOf(err, ""))
		}
	}
}

// TestReadCredentialYAMLAndCommand: a YAML file's key path and a command's
// output are the real values; the command runs with the caller's
// environment and its final newline is not part of the value.
func TestReadCredentialYAMLAndCommand(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "hosts.yml"), []byte("github.com:\n  oauth_token: gho_yaml0123456789abcdefghij\n  user: me\n"), 0o600)
	p := &profiles.Profile{Credentials: []profiles.Credential{
		{Name: "y", Where: "p.yaml:3", File: "~/hosts.yml", Path: `github\.com.oauth_token`},
		{Name: "c", Where: "p.yaml:4", Command: []string{"/bin/sh", "-c", "printf '%s\\n' \"$SECRET_FROM_KEYRING\""}, Env: "API_KEY"},
	}}
	got, err := readCredentials(p, []string{"SECRET_FROM_KEYRING=sk-cmd-0123456789abcdefghij", "PATH=/usr/bin:/bin"}, home)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].real != "gho_yaml0123456789abcdefghij" || got[1].real != "sk-cmd-0123456789abcdefghij" {
		t.Fatalf("got %+v", got)
	}
	env := credentialEnv([]string{"API_KEY=caller-own"}, got)
	if len(env) != 1 || env[0] != "API_KEY="+got[1].placeholder {
		t.Errorf("the command credential's env: %q, want its placeholder", env)
	}
	// The generated copy and a refresh keep YAML.
	f := filepath.Join(home, "hosts.yml")
	if err := rewriteCredentialFile(f, []secret{{cred: &profiles.Credential{Path: `github\.com.oauth_token`}, real: "gho_new_9876543210zyxwvu"}}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(f)
	if !strings.Contains(string(b), "oauth_token: gho_new_9876543210zyxwvu") || !strings.Contains(string(b), "user: me") || strings.Contains(string(b), "{") {
		t.Errorf("rewritten YAML file:\n%s", b)
	}
}

// TestCredentialEnv: the variable holds the placeholder, and a real value
// copied into another variable is replaced too.
func TestCredentialEnv(t *testing.T) {
	c := &profiles.Credential{Name: "k", Env: "API_KEY"}
	s := []secret{{cred: c, real: "sk-real-0123456789", placeholder: "sk-real-9876543210"}}
	env := credentialEnv([]string{"A=1", "API_KEY=sk-real-0123456789", "COPY=x sk-real-0123456789 y"}, s)
	got := strings.Join(env, "\n")
	if strings.Contains(got, "0123456789") || !strings.Contains(got, "API_KEY=sk-real-9876543210") || !strings.Contains(got, "COPY=x sk-real-9876543210 y") {
		t.Errorf("env:\n%s", got)
	}
	env = credentialEnv([]string{"A=1"}, s)
	if !strings.Contains(strings.Join(env, "\n"), "API_KEY=sk-real-9876543210") {
		t.Errorf("an env credential not passed by env.pass is set anyway: %v", env)
	}
}

// TestRewriteCredentialFile: refreshed values replace the named keys, the
// rest of the file stays, and the file keeps its mode (and, for a root
// caller, its owner), replaced by a rename (no temporary file left).
func TestRewriteCredentialFile(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "creds.json")
	os.WriteFile(f, []byte(`{"o": {"a": "old-access-0123456789", "r": "old-refresh-0123456789", "exp": 5}, "other": true}`), 0o640)
	os.Chmod(f, 0o640)
	uid, gid := os.Getuid(), os.Getgid()
	if os.Geteuid() == 0 {
		uid, gid = 4321, 4322
		os.Chown(f, uid, gid)
	}
	ss := []secret{
		{cred: &profiles.Credential{Path: "o.a"}, real: "new-access-9876543210"},
		{cred: &profiles.Credential{Path: "o.r"}, real: "new-refresh-9876543210"},
	}
	if err := rewriteCredentialFile(f, ss); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(f)
	for _, want := range []string{`"a": "new-access-9876543210"`, `"r": "new-refresh-9876543210"`, `"exp": 5`, `"other": true`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("file lacks %s:\n%s", want, b)
		}
	}
	st, _ := os.Stat(f)
	if st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", st.Mode().Perm())
	}
	if sys := st.Sys().(*syscall.Stat_t); int(sys.Uid) != uid || int(sys.Gid) != gid {
		t.Errorf("owner %d:%d, want %d:%d", sys.Uid, sys.Gid, uid, gid)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left beside it: %v", ents)
	}
	if err := rewriteCredentialFile(f, []secret{{cred: &profiles.Credential{Path: "o.gone"}, real: "x"}}); err == nil {
		t.Errorf("a key no longer in the file was written anyway")
	}
}

// TestExpandPathWildcard: a * key names every key of the object there;
// dots in keys are escaped in the concrete paths, which lookupPath and
// setPath read back.
func TestExpandPathWildcard(t *testing.T) {
	var doc any
	if err := json.Unmarshal([]byte(`{"mcpOAuth": {"b|2": {"accessToken": "tokB"}, "a.x|1": {"accessToken": "tokA"}, "c": {"accessToken": 7}, "d": "x"}}`), &doc); err != nil {
		t.Fatal(err)
	}
	got := expandPath(doc, profiles.SplitKeyPath("mcpOAuth.*.accessToken"), "")
	if len(got) != 2 || got[0].path != `mcpOAuth.a\.x|1.accessToken` || got[0].value != "tokA" || got[1].value != "tokB" {
		t.Fatalf("expandPath: %+v", got)
	}
	setPath(doc, got[0].path, "ph")
	if v, _ := lookupPath(doc, got[0].path); v != "ph" {
		t.Errorf("setPath/lookupPath through the escaped path: %v", v)
	}
}
