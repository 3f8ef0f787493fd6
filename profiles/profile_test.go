package profiles

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBuiltinsLoad(t *testing.T) {
	names := Builtins()
	for _, want := range []string{"default", "strict", "ci", "claude", "codex", "aider"} {
		found := false
		for _, n := range names {
			found = found || n == want
		}
		if !found {
			t.Fatalf("built-in %q missing from %v", want, names)
		}
	}
	for _, n := range names {
		p, hash, err := Load(n)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if p.Name != n || len(hash) != 64 {
			t.Fatalf("%s: name %q hash %q", n, p.Name, hash)
		}
	}
	c, _, _ := Load("claude")
	if c.Env.Set["CLAUDE_CONFIG_DIR"] != "${HOME}/.claude" || !strings.Contains(strings.Join(c.Home.Writable, " "), ".claude/") {
		t.Fatalf("claude profile lost its home settings: %+v", c.Home)
	}
	s, _, _ := Load("strict")
	if s.Network != NetworkNone || s.Home.Mode != "hidden" || !s.Propose() || s.Limits.WorkdirBytes != DefaultWorkdirBytes {
		t.Fatalf("strict: %+v", s)
	}
}

func write(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, body, want string
	}{
		{"unknown.yaml", "name: x\nnetwork: host\nnetwrok: none\n", `:3: unknown key "netwrok" (did you mean "network"?)`},
		{"dup.yaml", "name: x\nnetwork: host\nnetwork: none\n", "line 3"},
		{"badnet.yaml", "name: x\nnetwork: wifi\n", `network: "wifi"`},
		{"abs.yaml", "name: x\nhome:\n  writable: [/etc]\n", "relative to $HOME"},
		{"esc.yaml", "name: x\nhome:\n  writable: [../x]\n", "stay inside it"},
		{"secret.yaml", "name: x\nhome:\n  writable: [.ssh/]\n", "overlaps the secret path ~/.ssh"},
		{"twodocs.yaml", "name: x\n---\nname: y\n", "one YAML document"},
		{"req.yaml", "name: x\nrequire: [magic]\n", `require: "magic"`},
		{"empty.yaml", "", "empty profile"},
		{"wd.yaml", "name: x\nworkdir: proposal\n", `workdir: "proposal" is not direct or propose (did you mean "propose"?)`},
		{"wdrunc.yaml", "name: x\nworkdir: propose\nbackend: runc\n", "workdir: propose needs the namespace backend"},
		{"wdbytes.yaml", "name: x\nworkdir: propose\nlimits:\n  workdir_bytes: 1KiB\n", "limits.workdir_bytes: 1024 is below 1MiB"},
	}
	for _, tc := range tests {
		p := write(t, dir, tc.name, tc.body)
		_, _, err := Load(p)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s: want error naming the file and %q, got %v", tc.name, tc.want, err)
		}
	}
	if _, _, err := Load("no-such-profile"); err == nil || !strings.Contains(err.Error(), "built-in: ") {
		t.Errorf("unknown name: %v", err)
	}
}

func TestExtends(t *testing.T) {
	dir := t.TempDir()
	a := write(t, dir, "a.yaml", "name: a\nextends: "+filepath.Join(dir, "b.yaml")+"\n")
	write(t, dir, "b.yaml", "name: b\nextends: "+a+"\n")
	if _, _, err := Load(a); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Fatalf("cycle: %v", err)
	}
	c := write(t, dir, "c.yaml", "name: c\nextends: claude\nenv:\n  pass: [FOO]\n")
	p, _, err := Load(c)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "c" || p.Env.Set["CLAUDE_CONFIG_DIR"] == "" || !strings.Contains(strings.Join(p.Env.Pass, " "), "FOO") || !strings.Contains(strings.Join(p.Env.Pass, " "), "PATH") {
		t.Fatalf("merge lost fields: %+v", p)
	}
}
