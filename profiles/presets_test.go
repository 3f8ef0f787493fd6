package profiles

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPresetsLoad: every embedded egress preset parses strictly, names
// itself, and every entry (includes expanded) is a valid allow entry.
func TestPresetsLoad(t *testing.T) {
	if len(Presets()) == 0 {
		t.Fatal("no embedded presets")
	}
	for _, name := range Presets() {
		p, err := LoadPreset(name)
		if err != nil {
			t.Errorf("preset %s: %v", name, err)
			continue
		}
		if len(p.Allow) == 0 || p.Description == "" {
			t.Errorf("preset %s: %d entries, description %q", name, len(p.Allow), p.Description)
		}
	}
	if _, err := LoadPreset("nope"); err == nil || !strings.Contains(err.Error(), "not an egress preset") {
		t.Errorf("LoadPreset(nope) = %v, want 'not an egress preset'", err)
	}
}

// TestAllowlistOneWord: a security team switches each agent built-in to
// an allow list with one word (a profile extending it that says `network:
// allowlist`), and the session then reaches the preset — the agent's API
// and token hosts (every host a credential of the profile is sent to), the
// registries and the git hosts — plus the child's own entries, nothing
// else. On the old code `network: allowlist` without allow entries was
// refused ("needs at least one allow entry").
func TestAllowlistOneWord(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ builtin, want string }{
		{"claude", "api.anthropic.com:443"}, {"codex", "api.openai.com:443"}, {"aider", "api.openai.com:443"}, {"default", "github.com:443"},
	} {
		f := filepath.Join(dir, c.builtin+"-locked.yaml")
		if err := os.WriteFile(f, []byte("name: locked\nextends: "+c.builtin+"\nnetwork: allowlist\nallow: [git.example.com:443]\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		p, _, err := Load(f)
		if err != nil {
			t.Fatalf("%s: %v", c.builtin, err)
		}
		allow, err := p.AllowList()
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []string{c.want, "registry.npmjs.org:443", "proxy.golang.org:443", "github.com:443", "git.example.com:443"} {
			if !slices.Contains(allow, w) {
				t.Errorf("%s + network: allowlist: allow list lacks %s: %v", c.builtin, w, allow)
			}
		}
		for _, cr := range p.Credentials {
			for _, h := range cr.Hosts {
				if !slices.Contains(allow, h+":443") {
					t.Errorf("%s: credential %s goes to %s, which its preset %s does not reach", c.builtin, cr.Name, h, p.Preset)
				}
			}
		}
		// The preset is only in force under allowlist: the built-in
		// itself stays public.
		b, _, err := Load(c.builtin)
		if err != nil {
			t.Fatal(err)
		}
		if b.Network != NetworkPublic || b.Preset == "" {
			t.Errorf("built-in %s: network %s preset %q, want public with a preset", c.builtin, b.Network, b.Preset)
		}
		if a, _ := b.AllowList(); a != nil {
			t.Errorf("built-in %s (public): AllowList %v, want none", c.builtin, a)
		}
	}
	// The long form names any preset.
	f := filepath.Join(dir, "other.yaml")
	if err := os.WriteFile(f, []byte("name: other\nextends: default\nnetwork: {mode: allowlist, preset: codex}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, _, err := Load(f)
	if err != nil {
		t.Fatal(err)
	}
	if allow, _ := p.AllowList(); !slices.Contains(allow, "auth.openai.com:443") || slices.Contains(allow, "api.anthropic.com:443") {
		t.Errorf("preset codex: %v", allow)
	}
	// No preset and no entries: still refused, naming the way out.
	f = filepath.Join(dir, "empty.yaml")
	if err := os.WriteFile(f, []byte("name: empty\nnetwork: allowlist\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(f); err == nil || !strings.Contains(err.Error(), "needs an egress preset") {
		t.Errorf("allowlist without preset or entries: %v", err)
	}
}
