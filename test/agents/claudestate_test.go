package agents

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fedmem/fedmem/test/testutil"
)

const claudeKey = "sk-ant-api03-scripted-test-key-onboarded-0123456789abcdef"

// onboarded writes the state of a user who has used Claude Code before:
// onboarding done, theme chosen, this workdir trusted, the API key
// approved, and release notes not yet seen for this version (with the
// changelog cached), which is what makes Claude Code draw its full
// "Welcome back!" screen.
func onboarded(t *testing.T, home, work string) {
	t.Helper()
	st := map[string]any{
		"numStartups": 7, "theme": "dark", "hasCompletedOnboarding": true, "lastOnboardingVersion": "2.1.197",
		"firstStartTime": "2025-01-01T00:00:00.000Z", "userID": strings.Repeat("0123456789abcdef", 4),
		"lastReleaseNotesSeen":  "2.1.100",
		"customApiKeyResponses": map[string]any{"approved": []string{claudeKey[len(claudeKey)-20:]}, "rejected": []string{}},
		"projects":              map[string]any{work: map[string]any{"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true, "allowedTools": []string{}}},
	}
	b, _ := json.MarshalIndent(st, "", "  ")
	writeTree(t, home, map[string]string{
		".claude.json":               string(b),
		".claude/cache/changelog.md": "# Changelog\n\n## 2.1.197\n\n- Fixed a thing\n\n## 2.1.150\n\n- Added a thing\n",
	})
}

// TestClaudeWelcomeBack: with a pre-existing onboarded ~/.claude.json, bare
// `claude` and `fedmem-run claude` reach the same first screen ("Welcome
// back!", no "configuration file not found", no onboarding), and the
// user's own ~/.claude.json is not changed by the sandboxed run (its state
// goes to the per-profile copy).
func TestClaudeWelcomeBack(t *testing.T) {
	testutil.RequireRoot(t)
	need(t, "tmux")
	claude := need(t, "claude")
	bins := testutil.Binaries(t)
	base := testutil.TempDir(t)
	v := testutil.NewVault(t, filepath.Join(base, "vault"), testutil.VaultOptions{Fedmem: bins.Fedmem})
	work, home := filepath.Join(base, "work"), filepath.Join(base, "home")
	writeTree(t, work, map[string]string{"README.md": "hello\n"})
	env := "env -i PATH=/usr/local/bin:/usr/bin:/bin TERM=xterm-256color HOME=" + home +
		" DISABLE_AUTOUPDATER=1 ANTHROPIC_API_KEY=" + claudeKey + " "
	for _, c := range []struct{ name, cmd string }{
		{"bare", env + claude},
		{"fedmem-run", env + bins.FedmemRun + " --vault " + v.Dir + " -- " + claude},
	} {
		t.Run(c.name, func(t *testing.T) {
			onboarded(t, home, work)
			before, _ := os.ReadFile(filepath.Join(home, ".claude.json"))
			session := "fedmem-h12-welcome-" + c.name
			exec.Command("tmux", "kill-session", "-t", session).Run()
			shell := "cd " + work + " && " + c.cmd + "; echo FEDMEM-EXIT=$?; sleep 600"
			if out, err := exec.Command("tmux", "new-session", "-d", "-s", session, "-x", "120", "-y", "40", shell).CombinedOutput(); err != nil {
				t.Fatalf("tmux: %v: %s", err, out)
			}
			defer exec.Command("tmux", "kill-session", "-t", session).Run()
			scr := waitScreen(t, session, "for shortcuts", 90*time.Second)
			t.Logf("%s:\n%s", c.name, scr)
			for _, bad := range []string{"configuration file not found", "Choose the text style", "Do you trust", "backup file exists"} {
				if strings.Contains(scr, bad) {
					t.Fatalf("%s: %q on the first screen", c.name, bad)
				}
			}
			if !strings.Contains(scr, "Welcome back!") {
				t.Fatalf("%s: no \"Welcome back!\" on the first screen", c.name)
			}
			// End Claude Code from its terminal: /exit.
			exec.Command("tmux", "send-keys", "-t", session, "/exit", "Enter").Run()
			waitScreen(t, session, "FEDMEM-EXIT=", 60*time.Second)
			if c.name == "fedmem-run" {
				after, _ := os.ReadFile(filepath.Join(home, ".claude.json"))
				if string(after) != string(before) {
					t.Fatalf("the sandboxed claude changed the user's ~/.claude.json")
				}
				cp, err := os.ReadFile(filepath.Join(home, ".local/share/fedmem/claude/.claude/.claude.json"))
				if err != nil || !strings.Contains(string(cp), `"lastReleaseNotesSeen": "2.1.197"`) {
					t.Fatalf("the per-profile copy did not receive Claude Code's state: %v\n%.600s", err, cp)
				}
			}
		})
	}
}

func waitScreen(t *testing.T, session, want string, within time.Duration) string {
	t.Helper()
	var last string
	for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(300 * time.Millisecond) {
		out, err := exec.Command("tmux", "capture-pane", "-t", session, "-p").Output()
		if err != nil {
			t.Fatalf("tmux capture-pane: %v", err)
		}
		last = string(out)
		if strings.Contains(last, want) {
			return last
		}
	}
	t.Fatalf("%q never appeared; last screen:\n%s", want, last)
	return ""
}
