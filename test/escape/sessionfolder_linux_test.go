package escape

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestRefusedRunLeavesNoSessionFolder: a run whose agent never started
// leaves no session folder in 90-inbox/ (issue 23: empty folders piled up
// after refused runs). A command that is not there is refused by the init
// after the session folder was made and before anything of the agent ran
// (127). A session whose agent ran keeps its folder and everything in it,
// even when the agent itself exits 125 (fedmem-run's own code): nothing the
// agent wrote is ever removed.
func TestRefusedRunLeavesNoSessionFolder(t *testing.T) {
	for _, l := range []layout{{name: "beside/root"}, {name: "beside/user", gateOwned: true, user: true}} {
		t.Run(l.name, func(t *testing.T) {
			e := setup(t, l)
			inboxOf := func(r *run) string {
				t.Helper()
				p, _ := r.report["inbox"].(string)
				if p == "" || filepath.Dir(p) != filepath.Join(e.vault.Dir, "90-inbox") {
					t.Fatalf("report names no session inbox in %s/90-inbox: %v\nstderr:\n%s", e.vault.Dir, r.report["inbox"], r.stderr)
				}
				return p
			}

			r := e.run(t, nil, "no-such-agent-command")
			if r.code != 127 {
				t.Fatalf("exit %d, want 127 (not found)\n%s", r.code, r.stderr)
			}
			p := inboxOf(r)
			if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the refused run left its session folder %s (lstat: %v)", p, err)
			}
			if r.report["inbox_removed"] != true {
				t.Errorf("report: inbox_removed = %v, want true", r.report["inbox_removed"])
			}

			r = e.run(t, nil, "sh", "-c", `printf -- '---\ntype: Fact\n---\nx\n' > "$FEDMEM_INBOX/d.md"; exit 125`)
			if r.code != 125 {
				t.Fatalf("exit %d, want the agent's 125\n%s", r.code, r.stderr)
			}
			p = inboxOf(r)
			if _, err := os.Stat(filepath.Join(p, "d.md")); err != nil {
				t.Errorf("the agent's draft is gone after it exited 125: %v", err)
			}
			if r.report["inbox_removed"] != nil {
				t.Errorf("report: inbox_removed = %v for a session whose agent ran", r.report["inbox_removed"])
			}

			r = e.run(t, nil, "true")
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			if fi, err := os.Lstat(inboxOf(r)); err != nil || !fi.IsDir() {
				t.Errorf("a session whose agent ran lost its (empty) folder: %v; the gate's sweep prunes those", err)
			}
		})
	}
}
