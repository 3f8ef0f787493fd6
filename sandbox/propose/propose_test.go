package propose

import (
	"strings"
	"testing"
)

// TestProposalPersistenceWhy: a proposed path is flagged when a
// persistence family's pattern names it or a directory above it, at any
// depth, and everything under a .git is flagged as never applied.
func TestProposalPersistenceWhy(t *testing.T) {
	for _, c := range []struct {
		rel  string
		want string // a substring of the why; "" means not flagged
	}{
		{".envrc", "direnv"},
		{"sub/dir/.envrc", "direnv"},
		{".vscode/tasks.json", "editors"},
		{".git/hooks/pre-commit", "never applied"},
		{"vendor/x/.GIT/config", "never applied"},
		{"docs/CLAUDE.md", "instructions"},
		{"src/main.go", ""},
		{"README.md", ""},
	} {
		got := persistenceWhy(c.rel)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("persistenceWhy(%q) = %q, want %q", c.rel, got, c.want)
		}
	}
}

// TestProposalSummaryQuotesNames: the agent names the files, so a name
// with a control character (an escape sequence for the user's terminal)
// is quoted in the summary, never printed raw.
func TestProposalSummaryQuotesNames(t *testing.T) {
	evil := ".envrc\x1b]0;pwned\x07"
	pr := &Proposal{Kind: "branch", Branch: "fedmem/propose/S", Commit: "c0ffee", Apply: "git -C /w merge fedmem/propose/S",
		Flagged: []ProposedFile{{Path: evil, Change: "added", Why: "x"}},
		Skipped: []ProposedFile{{Path: "fifo\n", Change: "fifo", Why: "y"}}}
	s := pr.Summary()
	if strings.ContainsAny(s, "\x1b\x07") || strings.Contains(s, "fifo\n") {
		t.Errorf("raw control characters in the summary: %q", s)
	}
	if !strings.Contains(s, `FLAGGED ".envrc\x1b]0;pwned\a"`) || !strings.Contains(s, "apply: git -C /w merge fedmem/propose/S") {
		t.Errorf("summary %q", s)
	}
}

// TestProposalGitRunsCode: under a .git only the names that make Git run
// code are flagged one by one; the agent's own git use is counted.
func TestProposalGitRunsCode(t *testing.T) {
	for rel, want := range map[string]bool{
		".git/hooks/pre-commit": true, ".git/config": true, ".git/info/attributes": true,
		"sub/.git/modules/x/config": true, ".git/commondir": true,
		".git/index": false, ".git/objects/ab/cdef": false, ".git/refs/heads/main": false,
	} {
		if got := gitRunsCode(rel); got != want {
			t.Errorf("gitRunsCode(%q) = %v, want %v", rel, got, want)
		}
	}
}
