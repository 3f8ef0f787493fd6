package credentials

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/fedmem/fedmem/mounts/request"
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

// TestReadCredentialYAMLAndCommand: a YAML file's key path and a command's
// output are the real values; the command runs with the caller's
// environment and its final newline is not part of the value.
func TestReadCredentialYAMLAndCommand(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, "hosts.yml"), []byte("github.com:\n  oauth_token: gho_yaml0123456789abcdefghij\n  user: me\n"), 0o600)
	srcs := []Source{
		{Name: "y", Where: "p.yaml:3", File: "~/hosts.yml", Path: `github\.com.oauth_token`},
		{Name: "c", Where: "p.yaml:4", Command: []string{"/bin/sh", "-c", "printf '%s\\n' \"$SECRET_FROM_KEYRING\""}, Env: "API_KEY"},
	}
	got, err := Read(srcs, []string{"SECRET_FROM_KEYRING=sk-cmd-0123456789abcdefghij", "PATH=/usr/bin:/bin"}, home, nil)
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
	if err := rewriteCredentialFile(f, []Secret{{cred: &Source{Path: `github\.com.oauth_token`}, real: "gho_new_9876543210zyxwvu", target: f}}); err != nil {
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
	c := &Source{Name: "k", Env: "API_KEY"}
	s := []Secret{{cred: c, real: "sk-real-0123456789", placeholder: "sk-real-9876543210"}}
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
	ss := []Secret{
		{cred: &Source{Path: "o.a"}, real: "new-access-9876543210", target: f},
		{cred: &Source{Path: "o.r"}, real: "new-refresh-9876543210", target: f},
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
	if err := rewriteCredentialFile(f, []Secret{{cred: &Source{Path: "o.gone"}, real: "x", target: f}}); err == nil {
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
	got := expandPath(doc, request.SplitKeyPath("mcpOAuth.*.accessToken"), "")
	if len(got) != 2 || got[0].path != `mcpOAuth.a\.x|1.accessToken` || got[0].value != "tokA" || got[1].value != "tokB" {
		t.Fatalf("expandPath: %+v", got)
	}
	setPath(doc, got[0].path, "ph")
	if v, _ := lookupPath(doc, got[0].path); v != "ph" {
		t.Errorf("setPath/lookupPath through the escaped path: %v", v)
	}
}
