package escape

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRelativeCommandFromWorkdir: `fedmem-run -- ./agent.sh`, the README's
// own form, runs the script in the workdir as a shell would. The init
// resolved a name with a slash from its own directory (the root of the
// sandbox), not the workdir: exit 127, "stat ./agent.sh: no such file or
// directory". A path with a slash in a subfolder (scripts/run.sh) is
// relative to the workdir too; a name that is not there is still 127.
func TestRelativeCommandFromWorkdir(t *testing.T) {
	for _, l := range []layout{{name: "beside/root"}, {name: "beside/user", gateOwned: true, user: true}} {
		t.Run(l.name, func(t *testing.T) {
			e := setup(t, l)
			must(t, os.MkdirAll(filepath.Join(e.workdir, "scripts"), 0o755))
			for _, p := range []string{"agent.sh", "scripts/run.sh"} {
				must(t, os.WriteFile(filepath.Join(e.workdir, p), []byte("#!/bin/sh\necho \"RAN $0 in $(pwd)\"\n"), 0o755))
				if l.user {
					must(t, os.Chown(filepath.Join(e.workdir, p), agentUID, agentUID))
				}
			}
			for _, argv0 := range []string{"./agent.sh", "scripts/run.sh"} {
				r := e.run(t, nil, argv0)
				want := "RAN " + argv0 + " in " + e.workdir
				if r.code != 0 || !strings.Contains(string(r.stdout), want) {
					t.Errorf("%s: exit %d, want 0 and %q\nstdout:\n%s\nstderr:\n%s", argv0, r.code, want, r.stdout, r.stderr)
				}
			}
			r := e.run(t, nil, "./missing.sh")
			if r.code != 127 || !strings.Contains(string(r.stderr), filepath.Join(e.workdir, "missing.sh")) {
				t.Errorf("./missing.sh: exit %d, want 127 naming %s\n%s", r.code, filepath.Join(e.workdir, "missing.sh"), r.stderr)
			}
		})
	}
}
