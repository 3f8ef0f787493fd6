package escape

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestProfileCheckErrorRefused: fedmem-run refuses a profile that `fedmem
// profile check` calls invalid — before this, `writable: [/etc]` was
// planned as `rw /etc` and the agent changed the host's /etc. Exit 125,
// the message names the file, the line and the rule, nothing ran (the
// marker the agent would write does not exist), and check agrees.
func TestProfileCheckErrorRefused(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	prof := filepath.Join(e.outDir, "etc.yaml")
	os.WriteFile(prof, []byte("name: etc\nextends: default\nwritable:\n  - /etc\n"), 0o644)
	marker := "/etc/fedmem-escape-" + filepath.Base(e.base)
	defer os.Remove(marker)
	r := e.run(t, []string{"--profile", prof}, "sh", "-c", "echo owned > "+marker)
	want := prof + `:4: writable[0] "/etc" lies inside the system directory /etc`
	if r.code != 125 || !strings.Contains(string(r.stderr), want) || !strings.Contains(string(r.stderr), "(rule writable-system-dir)") {
		t.Errorf("exit %d, stderr %q; want 125 naming %q and the rule", r.code, r.stderr, want)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatalf("the agent wrote %s under a profile check refuses", marker)
	}
	var se bytes.Buffer
	cmd := exec.Command(e.bins.Fedmem, "profile", "check", prof)
	cmd.Stderr = &se
	code, errOut := exitCode(cmd.Run()), se.String()
	if code != 1 || !strings.Contains(errOut, want) {
		t.Errorf("fedmem profile check: exit %d, %q; want 1 and the same message", code, errOut)
	}
}
