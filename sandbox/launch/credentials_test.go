package launch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/profiles"
)

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
		got, err := readCredentials(p, environ, home, nil)
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
