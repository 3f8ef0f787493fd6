package escape

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// TestPersistenceNestedRepoInclude: a repository in a sub-folder of the
// workdir whose own .git/config includes a file of its working tree
// ([include] path = ../.gitshared, a common way to share config in a
// project): the agent must not leave that file (present or absent at the
// start) with a core.fsmonitor command the user's next git status runs.
func TestPersistenceNestedRepoInclude(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	for _, d := range []string{"present", "absent"} {
		sub := filepath.Join(e.workdir, d)
		must(t, os.MkdirAll(sub, 0o755))
		if out, err := exec.Command("git", "init", "-q", sub).CombinedOutput(); err != nil {
			t.Fatalf("git init: %v %s", err, out)
		}
		f, err := os.OpenFile(filepath.Join(sub, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
		must(t, err)
		f.WriteString("[include]\n\tpath = ../.gitshared\n")
		f.Close()
	}
	must(t, os.WriteFile(filepath.Join(e.workdir, "present", ".gitshared"), []byte("[user]\n\tname = me\n"), 0o644))
	script := `for d in present absent; do printf '[core]\n\tfsmonitor = touch /tmp/pwned-rtsb\n' >> $d/.gitshared && echo "WROTE $d"; done; true`
	r := e.run(t, nil, "sh", "-c", script)
	t.Logf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	for _, d := range []string{"present", "absent"} {
		out, _ := exec.Command("git", "-C", filepath.Join(e.workdir, d), "config", "--get", "core.fsmonitor").Output()
		if strings.TrimSpace(string(out)) != "" {
			t.Errorf("BREACH %s/.gitshared: the user's git now runs core.fsmonitor = %q", d, strings.TrimSpace(string(out)))
		}
	}
}

// TestPersistenceTopRepoInclude: the same include at the workdir's own
// repository (held: configuredRunLater reads the include chain).
func TestPersistenceTopRepoInclude(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	if out, err := exec.Command("git", "init", "-q", e.workdir).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	f, err := os.OpenFile(filepath.Join(e.workdir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
	must(t, err)
	f.WriteString("[include]\n\tpath = ../.gitshared\n")
	f.Close()
	r := e.run(t, nil, "sh", "-c", `printf '[core]\n\tfsmonitor = touch /tmp/pwned-rtsb\n' >> .gitshared && echo WROTE; true`)
	t.Logf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	out, _ := exec.Command("git", "-C", e.workdir, "config", "--get", "core.fsmonitor").Output()
	if strings.TrimSpace(string(out)) != "" {
		t.Errorf("BREACH .gitshared: the user's git now runs core.fsmonitor = %q", strings.TrimSpace(string(out)))
	}
}
