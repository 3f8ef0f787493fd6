package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestManPagesFromCommands: `fedmem man DIR` writes a page per command from
// the command tree (options and examples included), never a fedmem-run.1
// for `fedmem run` (the launcher's own page has that name).
func TestManPagesFromCommands(t *testing.T) {
	dir := t.TempDir()
	if code, _, errOut := runFedmem("man", dir); code != 0 {
		t.Fatalf("fedmem man: %d %s", code, errOut)
	}
	for _, p := range []string{"fedmem.1", "fedmem-init.1", "fedmem-review-approve.1", "fedmem-gate-run.1"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "fedmem-run.1")); err == nil {
		t.Error("fedmem man wrote fedmem-run.1 for `fedmem run` (the launcher's page)")
	}
	b, _ := os.ReadFile(filepath.Join(dir, "fedmem-init.1"))
	for _, want := range []string{".SH OPTIONS", `\fB--gate-user\fP`, ".SH EXAMPLE"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("fedmem-init.1 lacks %q", want)
		}
	}
}

// TestLauncherPage: fedmem-run's page is its --help turned into roff: the
// synopsis, description, exit status and one entry per flag.
func TestLauncherPage(t *testing.T) {
	help := "Usage: fedmem-run [flags] [--] CMD [ARGS…]\n\nRuns CMD in a sandbox.\n.dot line\n\nExit status: the agent's; 125 fedmem error.\n\nFlags (one or two dashes):\n  -agent-user string\n    \troot only: the host user\n  -explain\n    \tprint the mount plan\n"
	page, err := launcherPage(help, "v1.2")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".TH \"FEDMEM-RUN\" \"1\"", ".SH SYNOPSIS\n\\fBfedmem\\-run [flags] [\\-\\-] CMD [ARGS…]\\fP", ".SH EXIT STATUS\nthe agent's; 125 fedmem error.", ".TP\n\\fB\\-\\-agent\\-user\\fP \\fISTRING\\fP\nroot only: the host user", ".TP\n\\fB\\-\\-explain\\fP\nprint the mount plan", "Runs CMD in a sandbox. .dot line"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
	if _, err := launcherPage("no usage here", "v"); err == nil {
		t.Error("help without a Usage line accepted")
	}
	if _, err := launcherPage("Usage: x\n\ntext\n", "v"); err == nil {
		t.Error("help without flags accepted")
	}
}
