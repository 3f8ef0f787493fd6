package profiles

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeProfile(t *testing.T, dir, name, body string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, 0o644) // whatever the umask
	return p
}

// TestSearchPathOrder: a name resolves in the project folder, then the
// user's, then the system's, then the built-ins; `extends: NAME` in a file
// named NAME reaches the next one of that name; the source is recorded.
func TestSearchPathOrder(t *testing.T) {
	root := t.TempDir()
	os.Chmod(root, 0o755)
	proj, home := filepath.Join(root, "proj"), filepath.Join(root, "home")
	search := SearchPath(proj, home)
	search[2].Dir = filepath.Join(root, "etc", "fedmem", "profiles") // not the real /etc
	pdir, udir, sdir := search[0].Dir, search[1].Dir, search[2].Dir
	for _, d := range []string{filepath.Join(root, "proj"), filepath.Join(root, "home"), filepath.Join(root, "home", ".config"), filepath.Join(root, "etc")} {
		os.MkdirAll(d, 0o755)
		os.Chmod(d, 0o755)
	}

	// Built-in when nothing is in the search path.
	p, _, err := LoadFrom("claude", search)
	if err != nil || p.Source != "builtin:claude" || SourceKind(p.Source, search) != "builtin" {
		t.Fatalf("built-in: %v %v", p, err)
	}
	_, builtinHash, _ := Load("claude")

	sys := writeProfile(t, sdir, "team", "name: team\nextends: default\nnetwork: none\n")
	p, _, err = LoadFrom("team", search)
	if err != nil || p.Source != sys || p.Network != NetworkNone || SourceKind(p.Source, search) != SearchSystem {
		t.Fatalf("system: %+v %v", p, err)
	}
	usr := writeProfile(t, udir, "team", "name: team\nextends: default\nnetwork: allowlist\nallow: [example.com]\n")
	if p, _, err = LoadFrom("team", search); err != nil || p.Source != usr || p.Network != NetworkAllowlist {
		t.Fatalf("user over system: %+v %v", p, err)
	}
	// A project claude.yaml that extends claude builds on the built-in.
	pc := writeProfile(t, pdir, "claude", "name: claude\nextends: claude\nnetwork: none\n")
	p, hash, err := LoadFrom("claude", search)
	if err != nil || p.Source != pc || p.Network != NetworkNone || SourceKind(p.Source, search) != SearchProject {
		t.Fatalf("project claude: %+v %v", p, err)
	}
	if hash == builtinHash {
		t.Error("the project profile has the built-in's hash")
	}
	if !Opens(p, ".claude") {
		t.Error("extends: claude did not bring the built-in claude's home paths")
	}
	// Load (no search path: the gate's view of a name) is the built-in.
	if p, h, err := Load("claude"); err != nil || p.Source != "builtin:claude" || h != builtinHash {
		t.Fatalf("Load ignores the search path: %v %v", p, err)
	}
	// Two project files extending each other by name: not a loop — the
	// second reaches past the project folder and finds no such profile.
	writeProfile(t, pdir, "a", "name: a\nextends: b\n")
	writeProfile(t, pdir, "b", "name: b\nextends: a\n")
	if _, _, err := LoadFrom("a", search); !errors.Is(err, ErrUnknown) {
		t.Fatalf("a→b→a: %v", err)
	}
	// Rule errors name the project file.
	writeProfile(t, pdir, "bad", "name: bad\nextends: default\nnetwrok: none\n")
	if _, _, _, err := LoadCheckedFrom("bad", search); err == nil || !strings.Contains(err.Error(), filepath.Join(pdir, "bad.yaml")+`:3: unknown key "netwrok" (did you mean "network"?)`) {
		t.Fatalf("YAML error: %v", err)
	}
	// Not found anywhere: the error lists where it looked.
	if _, _, err := LoadFrom("nowhere", search); !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), pdir) {
		t.Fatalf("unknown: %v", err)
	}
}

// TestSearchPathTrust: a profile file in the search path that others could
// write — group/other-writable file or folder, a symlink, not a regular
// file — is refused with the file and the rule, never read.
func TestSearchPathTrust(t *testing.T) {
	root := t.TempDir()
	os.Chmod(root, 0o755)
	proj := filepath.Join(root, "proj")
	search := SearchPath(proj, "")
	pdir := search[0].Dir
	p := writeProfile(t, pdir, "x", "name: x\nextends: default\n")
	os.Chmod(filepath.Dir(pdir), 0o755)
	os.Chmod(pdir, 0o755)
	os.Chmod(proj, 0o755)
	if _, _, err := LoadFrom("x", search); err != nil {
		t.Fatalf("a plain 0644 file of the caller: %v", err)
	}
	for _, c := range []struct {
		name, want string
		prep, undo func()
	}{
		{"group-writable file", "writable by group or others (mode 0664", func() { os.Chmod(p, 0o664) }, func() { os.Chmod(p, 0o644) }},
		{"world-writable file", "writable by group or others", func() { os.Chmod(p, 0o646) }, func() { os.Chmod(p, 0o644) }},
		{"world-writable profiles folder", pdir + " is writable by group or others", func() { os.Chmod(pdir, 0o777) }, func() { os.Chmod(pdir, 0o755) }},
		{"group-writable .fedmem", filepath.Dir(pdir) + " is writable by group or others", func() { os.Chmod(filepath.Dir(pdir), 0o775) }, func() { os.Chmod(filepath.Dir(pdir), 0o755) }},
		{"symlink", "is a symbolic link", func() {
			os.Rename(p, p+".real")
			os.Symlink(p+".real", p)
		}, func() { os.Remove(p); os.Rename(p+".real", p) }},
		{"linked .fedmem", "is a symbolic link (rule: a project's .fedmem/profiles", func() {
			os.Rename(filepath.Dir(pdir), filepath.Join(proj, "elsewhere"))
			os.Symlink(filepath.Join(proj, "elsewhere"), filepath.Dir(pdir))
		}, func() { os.Remove(filepath.Dir(pdir)); os.Rename(filepath.Join(proj, "elsewhere"), filepath.Dir(pdir)) }},
		{"directory", "not a regular file", func() { os.Rename(p, p+".real"); os.Mkdir(p, 0o755) }, func() { os.Remove(p); os.Rename(p+".real", p) }},
	} {
		c.prep()
		_, _, err := LoadFrom("x", search)
		c.undo()
		if !errors.Is(err, ErrUntrustedProfile) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "rule:") {
			t.Errorf("%s: %v; want ErrUntrustedProfile naming %q and the rule", c.name, err, c.want)
		}
	}
	// A search folder this user cannot enter: nothing there is its
	// profile; a file it can see but not read is refused.
	if os.Geteuid() != 0 {
		os.Chmod(pdir, 0o000)
		if _, _, err := LoadFrom("default", search); err != nil {
			t.Errorf("unsearchable project folder: %v", err)
		}
		os.Chmod(pdir, 0o755)
		os.Chmod(p, 0o000)
		if _, _, err := LoadFrom("x", search); err == nil {
			t.Error("an unreadable project profile was passed over")
		}
		os.Chmod(p, 0o644)
	}
	if os.Geteuid() == 0 {
		os.Chown(p, 64000, 64000)
		_, _, err := LoadFrom("x", search)
		if !errors.Is(err, ErrUntrustedProfile) || !strings.Contains(err.Error(), "owned by uid 64000") {
			t.Errorf("a file of another user: %v", err)
		}
	}
}
