package profiles

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A typo in a key is reported with the file, the line, the key as the
// profile writes it and the closest valid key, never a Go type name.
func TestUnknownKeySuggestsClosest(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{"name: x\nnetwrok: none\n", `p.yaml:2: unknown key "netwrok" (did you mean "network"?)`},
		{"name: x\nhome:\n  writeable: [.x/]\n", `p.yaml:3: unknown key "home.writeable" (did you mean "writable"?)`},
		{"name: x\nlimits:\n  wall_tme: 1h\n", `p.yaml:3: unknown key "limits.wall_tme" (did you mean "wall_time"?)`},
		{"name: x\nzzzzzz: 1\n", `p.yaml:2: unknown key "zzzzzz" (valid: name,`},
		{"name: x\nstate:\n  - {path: .cache/, sead: x}\n", `did you mean "seed"?`},
	} {
		_, err := Parse("p.yaml", []byte(c.doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: got %v, want %q", c.doc, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "profiles.") {
			t.Errorf("%q: error names a Go type: %v", c.doc, err)
		}
	}
}

// TestYAMLErrorsNameKeyNotGoType: typos and values of the wrong kind are
// reported with the file, the line, the key as the profile writes it and
// what was expected — never a Go type name (profiles.Home, map[string]string,
// []string, int) or a YAML tag.
func TestYAMLErrorsNameKeyNotGoType(t *testing.T) {
	goType := regexp.MustCompile(`profiles\.[A-Z]|map\[|\[\]string|\binto\b|\bint\b|!!|not found in type`)
	for _, c := range []struct{ yaml, want string }{
		{"name: t\nhome:\n  writeable: [.cache]\n", `x.yaml:3: unknown key "home.writeable" (did you mean "writable"?)`},
		{"name: t\nnetwork: [allowlist]\n", `x.yaml:2: network: expected a mode (none, allowlist, public, host) or {mode: M, preset: P}, got a list`},
		{"name: t\nnetwork: {mode: allowlist, presets: claude}\n", `x.yaml:2: unknown key "network.presets" (want mode and preset) (did you mean "preset"?)`},
		{"name: t\nnetwork: {mode: allowlist, preset: claud}\n", `x.yaml:2: network.preset: preset "claud" is not an egress preset (did you mean "claude"?)`},
		{"name: t\nnetwork: allowlst\n", `network: "allowlst" is not none, allowlist, public or host (did you mean "allowlist"?)`},
		{"name: t\ntty: nevr\n", `tty: "nevr" is not auto or never (did you mean "never"?)`},
		{"name: t\nenv:\n  set: [A, B]\n", `x.yaml:3: env.set: expected a mapping (key: value lines), got a list`},
		{"name: t\nhome: [a]\n", `x.yaml:2: home: expected a mapping (key: value lines), got a list`},
		{"name: t\nallow: {a: b}\n", `x.yaml:2: allow: expected a list, got a mapping`},
		{"name: t\nlimits:\n  pids: lots\n", `x.yaml:3: limits.pids: expected a whole number, got "lots"`},
		{"name: t\nlimits:\n  memory: [1]\n", `x.yaml:3: limits.memory: expected a size like 512KiB, 100MiB or 1GiB, got a list`},
		{"name: t\nlimits:\n  wall_time: {a: 1}\n", `x.yaml:3: limits.wall_time: expected a duration like 90s, 30m or 2h, got a mapping`},
		{"name: t\nlimits:\n  wall_time: soon\n", `x.yaml:3: limits.wall_time: "soon" is not a positive duration`},
		{"name: t\nstate:\n  - path: .cache\n    real: [1]\n", `x.yaml:4: state[0].real: expected a string, got a list`},
		{"name: [x]\n", `x.yaml:1: name: expected a string, got a list`},
	} {
		dir := t.TempDir()
		p := filepath.Join(dir, "x.yaml")
		os.WriteFile(p, []byte(c.yaml), 0o644)
		_, _, err := Load(p)
		if err == nil {
			t.Errorf("%q: loaded", c.yaml)
			continue
		}
		msg := strings.ReplaceAll(err.Error(), dir+"/", "")
		if !strings.Contains(msg, c.want) {
			t.Errorf("%q:\n got  %s\n want %s", c.yaml, msg, c.want)
		}
		if m := goType.FindString(msg); m != "" {
			t.Errorf("%q: Go type or YAML tag %q leaks: %s", c.yaml, m, msg)
		}
	}
}
