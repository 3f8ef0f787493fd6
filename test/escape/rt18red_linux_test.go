package escape

import (
	"os"
	"strings"
	"testing"
)

// TestRT18ClaudeConfigBackups: Claude Code keeps timestamped backups of
// its ~/.claude.json — where a Console login keeps the API key
// (primaryApiKey) — and since 2.1.50 writes them in ~/.claude/backups/
// (.claude.json.backup.<ms>; anthropics/claude-code#32822, cc-switch#1102;
// older versions beside the file, ~/.claude.json.backup). The claude
// profile covers ~/.claude.json's copy with a placeholder
// (TestRT18ConsoleKeyInClaudeJSON) but shows ~/.claude/ writable, backups
// and all: the agent reads the real key there. Also a
// ~/.claude/settings.json.backup (what tools that edit settings.json
// leave) holding the settings' env key. Fails on h-rt18b (cc1c15a).
// Open breach (FEDMEM_OPEN_BREACHES=1 makes it fail): the fix is not one
// more file entry but a rule — no file the agent can read under a shown or
// writable home folder holds a real value (walk them at the start, cover
// each file that does with a placeholder copy, as the source files are).
func TestRT18ClaudeConfigBackups(t *testing.T) {
	cfg := `{"primaryApiKey": "` + rt18ClaudeKey + `", "hasCompletedOnboarding": true}`
	o := rt18ClaudeKeySession(t, rt18ClaudeKey, map[string]string{
		".claude.json": cfg,
		".claude/backups/.claude.json.backup.1771843014824": cfg,
		".claude.json.backup":                               cfg,
		".claude/settings.json.backup":                      `{"env": {"ANTHROPIC_API_KEY": "` + rt18ClaudeKey + `"}}`,
	}, false)
	if !strings.Contains(o, "HITS []") {
		if os.Getenv("FEDMEM_OPEN_BREACHES") != "1" {
			t.Skipf("open breach (FEDMEM_OPEN_BREACHES=1 makes it fail): the real key in Claude Code's backups under ~/.claude: %s", o)
		}
		t.Errorf("BREACH: the caller's real Console key is readable inside under the claude profile, in Claude Code's own backups: %s", o)
	}
}
