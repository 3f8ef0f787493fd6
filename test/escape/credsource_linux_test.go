package escape

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCredentialCommandSource: a credential read by a command (a keyring
// lookup, run outside the sandbox as the caller) gives the agent a
// placeholder of its shape in the variable the entry names, never the real
// value; a command that fails refuses the session with exit 125 naming
// the profile's file and line, and the agent never runs. On the old code
// `command:` was an unknown key (exit 125 for every profile using it, the
// working one included).
func TestCredentialCommandSource(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	keyring := filepath.Join(e.outDir, "keyring")
	must(t, os.WriteFile(keyring, []byte(realEnvKey+"\n"), 0o600))
	profile := func(name, command string) string {
		p := filepath.Join(e.outDir, name+".yaml")
		body := "name: " + name + "\nextends: default\nnetwork: none\n" +
			"credentials:\n" +
			"  - name: keyring-key\n    command: " + command + "\n    env: TEST_API_KEY\n"
		must(t, os.WriteFile(p, []byte(body), 0o644))
		return p
	}
	good := profile("cmdgood", `[/bin/cat, "`+keyring+`"]`)
	r := e.run(t, []string{"--profile", good}, "/bin/sh", "-c", `printf '%s\n' "$TEST_API_KEY"`)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	got := strings.TrimSpace(string(r.stdout))
	if strings.Contains(got, credMarker) || got == realEnvKey {
		t.Errorf("BREACH the agent holds the real value of a command source: %q", got)
	}
	if len(got) != len(realEnvKey) || !strings.HasPrefix(got, "sk-test-api03-") {
		t.Errorf("the agent's TEST_API_KEY %q is not a placeholder of the real value's shape", got)
	}
	bad := profile("cmdbad", `[/bin/sh, -c, "echo the keyring is locked >&2; exit 4"]`)
	marker := filepath.Join(e.outDir, "ran")
	r = e.run(t, []string{"--profile", bad}, "touch", marker)
	if r.code != 125 {
		t.Fatalf("failing command source: exit %d, want 125\n%s", r.code, r.stderr)
	}
	if !strings.Contains(string(r.stderr), bad+":5") || !strings.Contains(string(r.stderr), "exit status 4") || !strings.Contains(string(r.stderr), "the keyring is locked") {
		t.Errorf("stderr does not name the profile line, the exit status and the command's words:\n%s", r.stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the agent ran")
	}
}
