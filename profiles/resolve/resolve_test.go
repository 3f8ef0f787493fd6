package resolve

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fedmem/fedmem/profiles"
)

// TestTightenOnlyTightens: every flag value is ranked against every
// network mode; a value looser than the profile's is refused naming both,
// a tighter or equal one is applied.
func TestTightenOnlyTightens(t *testing.T) {
	order := []string{profiles.NetworkNone, profiles.NetworkAllowlist, profiles.NetworkPublic, profiles.NetworkHost}
	for pi, have := range order {
		for fi, flag := range order {
			p := &profiles.Profile{Name: "p", Network: have, Allow: []string{"a.example:443"}}
			err := Tighten(p, 0, flag)
			switch {
			case fi > pi:
				if err == nil || !strings.Contains(err.Error(), "--network "+flag+" would loosen profile p (network: "+have+")") {
					t.Errorf("%s on %s: %v, want a refusal", flag, have, err)
				}
			case err != nil || p.Network != flag:
				t.Errorf("%s on %s: %v, network %s", flag, have, err, p.Network)
			}
		}
	}
	p := &profiles.Profile{Name: "p", Network: profiles.NetworkPublic}
	if err := Tighten(p, 0, profiles.NetworkAllowlist); err == nil || !strings.Contains(err.Error(), "no allow list") {
		t.Errorf("allowlist without an allow list: %v", err)
	}
	// A built-in with an egress preset: --network allowlist is the one
	// word that switches it to the preset.
	cl, _, err := profiles.Load("claude")
	if err != nil {
		t.Fatal(err)
	}
	if err := Tighten(cl, 0, profiles.NetworkAllowlist); err != nil || cl.Network != profiles.NetworkAllowlist {
		t.Errorf("--network allowlist on claude (preset %q): %v", cl.Preset, err)
	}
	if allow, _ := cl.AllowList(); !slices.Contains(allow, "api.anthropic.com:443") {
		t.Errorf("claude under --network allowlist reaches %v", allow)
	}
	if err := Tighten(p, 0, "wifi"); err == nil {
		t.Error("--network wifi accepted")
	}
	p = &profiles.Profile{Name: "p", Limits: profiles.Limits{WallTime: profiles.Duration(time.Minute)}}
	if err := Tighten(p, time.Hour, ""); err == nil {
		t.Error("--timeout 1h on wall_time 1m accepted")
	}
	if err := Tighten(p, time.Second, ""); err != nil || time.Duration(p.Limits.WallTime) != time.Second {
		t.Errorf("--timeout 1s: %v %v", err, p.Limits.WallTime)
	}
}

// TestResolveExplainPlaceholder: without a vault, the placeholder stands
// for it; the caller's plan is computed and nothing is created.
func TestResolveExplainPlaceholder(t *testing.T) {
	wd := t.TempDir()
	s, err := Resolve(Options{Profile: "strict", Placeholder: "/path/to/vault", Workdir: wd, Session: "SESSION", Caller: true})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Placeholder || s.Plan.Network != profiles.NetworkNone || s.UID != os.Getuid() || s.IdentitySource != "caller (plan only)" {
		t.Errorf("session %+v", s)
	}
	if _, err := os.Stat(filepath.Join("/path/to/vault")); err == nil {
		t.Skip("a real /path/to/vault exists here")
	}
	if _, err := Resolve(Options{Profile: "strict", Workdir: wd}); err == nil || !strings.Contains(err.Error(), "no vault") {
		t.Errorf("no vault: %v", err)
	}
	if n := ProfileName("", []string{"/usr/bin/claude", "-p"}); n != "claude" {
		t.Errorf("ProfileName(claude) = %s", n)
	}
	if n := ProfileName("", []string{"bash"}); n != "default" {
		t.Errorf("ProfileName(bash) = %s", n)
	}
}

// TestExplainCredentials: explain (fedmem profile explain and
// fedmem-run --explain) lists each credential, its hosts and how it is
// injected, in text and JSON, without reading any source.
func TestExplainCredentials(t *testing.T) {
	for name, want := range map[string]string{
		"claude": "credential anthropic-api-key: env ANTHROPIC_API_KEY: header x-api-key to api.anthropic.com",
		"codex":  "credential codex-access-token: file ~/.codex/auth.json at tokens.access_token: header Authorization (Bearer) to api.openai.com, chatgpt.com",
	} {
		s, err := Resolve(Options{Profile: name, Placeholder: "/path/to/vault", Workdir: t.TempDir(), Session: "SESSION", Caller: true})
		if err != nil {
			t.Fatal(err)
		}
		var text, js strings.Builder
		if err := Explain(&text, s, ExplainOptions{}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text.String(), want) {
			t.Errorf("%s: explain lacks %q:\n%s", name, want, text.String())
		}
		if err := Explain(&js, s, ExplainOptions{JSON: true}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(js.String(), `"credentials": [`) || !strings.Contains(js.String(), `"injected": `) {
			t.Errorf("%s: explain --json lacks credentials:\n%s", name, js.String())
		}
	}
}
