package escape

import (
	"os"
	"path/filepath"
	"testing"
)

// replRCFiles are the rc files an interpreter or REPL started in a folder
// sources from that folder by itself, as pdb's .pdbrc and irb's .irbrc
// (held): R (and Rscript, RStudio) .Rprofile and .Renviron, Octave
// .octaverc, GHCi .ghci, the OCaml toplevel .ocamlinit, Erlang's erl
// .erlang, IEx .iex.exs.
var replRCFiles = []string{".Rprofile", ".Renviron", ".octaverc", ".ghci", ".ocamlinit", ".erlang", ".iex.exs", ".pdbrc"}

// TestPersistenceREPLRCFiles (guarantee 6): such a file the agent writes at
// the top of the workdir or below must not be left where the interpreter
// finds it after the session.
func TestPersistenceREPLRCFiles(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	must(t, os.MkdirAll(filepath.Join(e.workdir, "sub"), 0o755))
	script := `for f in "$@"; do for d in . sub; do echo 'system("touch /tmp/pwned")' > "$d/$f" 2>/dev/null && echo "WROTE $d/$f"; done; done; true`
	r := e.run(t, nil, append([]string{"sh", "-c", script, "sh"}, replRCFiles...)...)
	t.Logf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	if r.code != 0 {
		t.Fatalf("exit %d", r.code)
	}
	var kept []string
	for _, f := range replRCFiles {
		for _, d := range []string{".", "sub"} {
			if _, err := os.Lstat(filepath.Join(e.workdir, d, f)); err == nil {
				kept = append(kept, filepath.Join(d, f))
			}
		}
	}
	if len(kept) > 0 {
		t.Errorf("BREACH rc files an interpreter started here runs, left after the session: %v", kept)
	}
}
