package profiles

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExtendsFileRelativeToProfile: `extends: base.yaml` is the sibling of
// the profile that says it, never a base.yaml in the current directory
// (the agent's workdir), and a bare NAME never falls back to a file in
// the current directory.
func TestExtendsFileRelativeToProfile(t *testing.T) {
	root := t.TempDir()
	pdir, cwd := filepath.Join(root, "profiles"), filepath.Join(root, "work")
	for _, d := range []string{pdir, cwd} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p, s string, mode os.FileMode) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(pdir, "base.yaml"), "name: base\nextends: default\nnetwork: none\n", 0o644)
	write(filepath.Join(pdir, "team.yaml"), "name: team\nextends: base.yaml\n", 0o644)
	write(filepath.Join(cwd, "base.yaml"), "name: base\nextends: default\nnetwork: host\n", 0o644)
	write(filepath.Join(cwd, "planted"), "name: planted\nnetwork: host\n", 0o644)
	t.Chdir(cwd)

	p, _, err := Load(filepath.Join(pdir, "team.yaml"))
	if err != nil || p.Network != NetworkNone {
		t.Fatalf("team.yaml: %+v %v; want network none from %s", p, err, filepath.Join(pdir, "base.yaml"))
	}
	if _, _, err := Load("planted"); !errors.Is(err, ErrUnknown) {
		t.Fatalf("bare name %q loaded a file of the current directory: %v", "planted", err)
	}
	// A FILE typed by the user is taken as given (relative to the cwd).
	if p, _, err := Load("./base.yaml"); err != nil || p.Network != NetworkHost {
		t.Fatalf("./base.yaml: %+v %v", p, err)
	}
	// Every file gets the search path's owner/mode rule: a group-writable
	// parent is refused, naming the file and the rule.
	write(filepath.Join(pdir, "base.yaml"), "name: base\nextends: default\nnetwork: none\n", 0o664)
	_, _, err = Load(filepath.Join(pdir, "team.yaml"))
	if !errors.Is(err, ErrUntrustedProfile) || !strings.Contains(err.Error(), "base.yaml") || !strings.Contains(err.Error(), "writable by group or others") {
		t.Fatalf("group-writable base.yaml: %v", err)
	}
}
