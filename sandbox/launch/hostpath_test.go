package launch

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestHostPATHDropsAgentFolders: an entry at or under a writable path, one
// that reaches it through a link, and relative entries are left out of
// the PATH fedmem-run runs its own programs from; the rest keep their
// order.
func TestHostPATHDropsAgentFolders(t *testing.T) {
	d := t.TempDir()
	work := filepath.Join(d, "work")
	if err := os.MkdirAll(filepath.Join(work, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(d, "tools")
	if err := os.Symlink(filepath.Join(work, "bin"), link); err != nil {
		t.Fatal(err)
	}
	path := "/usr/local/bin:" + work + "/bin:" + link + "::.:bin:/usr/bin:" + work + ":" + d + "/workshop"
	kept, dropped := hostPATH(path, []string{work})
	if want := "/usr/local/bin:/usr/bin:" + d + "/workshop"; kept != want {
		t.Errorf("kept %q, want %q", kept, want)
	}
	for _, e := range []string{work + "/bin", link, "", ".", "bin", work} {
		if !slices.Contains(dropped, e) {
			t.Errorf("%q not dropped: %q", e, dropped)
		}
	}
	if kept, dropped := hostPATH("/usr/bin:/bin", []string{work}); kept != "/usr/bin:/bin" || len(dropped) != 0 {
		t.Errorf("a PATH with no agent folder changed: %q %q", kept, dropped)
	}
}
