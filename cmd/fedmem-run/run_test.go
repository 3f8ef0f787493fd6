package main

import (
	"os"
	"strings"
	"testing"
)

// TestUnknownFlagSuggests (issue 23): a mistyped flag is refused (125,
// fedmem-run's own failure) and names the flag that was meant.
func TestUnknownFlagSuggests(t *testing.T) {
	dir := t.TempDir()
	out, _ := os.Create(dir + "/out")
	errf, _ := os.Create(dir + "/err")
	defer out.Close()
	defer errf.Close()
	code := run([]string{"--vaul", "/nonexistent", "--", "true"}, nil, out, errf)
	b, _ := os.ReadFile(dir + "/err")
	if code != 125 || !strings.Contains(string(b), "fedmem-run: did you mean --vault?") {
		t.Errorf("exit %d, stderr:\n%s", code, b)
	}
}
