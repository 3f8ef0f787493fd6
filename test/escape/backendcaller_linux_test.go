package escape

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fedmem/fedmem/test/testutil"
)

// TestContainerBackendRefusesUnprivilegedCaller: runc and containerd need
// a root caller (rootless runc and containerd are not supported). An
// unprivileged caller who asks for one — by --backend or by a profile's
// backend: — gets exit 125 and a message naming the backend and the way
// out (--backend namespace) before a session exists: the agent never runs
// and the vault is byte for byte unchanged (no inbox folder, no session
// record). It names its backends itself and needs no runtime, so it runs
// in the namespace pass only (the Makefile's MATRIX_SKIP).
func TestContainerBackendRefusesUnprivilegedCaller(t *testing.T) {
	for _, backend := range []string{"runc", "containerd"} {
		t.Run(backend, func(t *testing.T) {
			e := prepare(t, layout{name: "beside/user", gateOwned: true, user: true})
			prof := filepath.Join(e.outDir, "ctr.yaml")
			must(t, os.WriteFile(prof, []byte("name: ctr\nextends: default\nbackend: "+backend+"\n"), 0o644))
			for _, how := range []struct {
				name  string
				extra []string
			}{
				{"flag", []string{"--backend", backend}},
				{"profile", []string{"--profile", prof}},
			} {
				before, err := testutil.Take(e.vault.Dir)
				must(t, err)
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				cmd := e.command(ctx, "", nil, "/bin/sh", "-c", "echo RAN > ran.txt; echo AGENT-RAN")
				// e.command added FEDMEM_BACKEND's flags; this test asks for
				// its own backend instead.
				args := []string{}
				for i := 0; i < len(cmd.Args); i++ {
					if cmd.Args[i] == "--backend" || cmd.Args[i] == "--containerd-address" {
						i++
						continue
					}
					if cmd.Args[i] == "--" && i > 0 && cmd.Args[i-1] != "--inh-caps=-all" && cmd.Args[i-1] != "env" {
						args = append(args, how.extra...)
					}
					args = append(args, cmd.Args[i])
				}
				cmd.Args = args
				var so, se bytes.Buffer
				cmd.Stdout, cmd.Stderr = &so, &se
				code := exitCode(cmd.Run())
				cancel()
				t.Logf("%s: %v: exit %d\n%s", how.name, cmd.Args, code, se.Bytes())
				if code != 125 {
					t.Errorf("%s: exit %d, want 125", how.name, code)
				}
				for _, want := range []string{"the " + backend + " backend needs a root caller", "--backend namespace"} {
					if !strings.Contains(se.String(), want) {
						t.Errorf("%s: stderr does not say %q:\n%s", how.name, want, se.Bytes())
					}
				}
				if strings.Contains(so.String(), "AGENT-RAN") {
					t.Errorf("%s: the agent ran:\n%s", how.name, so.Bytes())
				}
				if _, err := os.Stat(filepath.Join(e.workdir, "ran.txt")); err == nil {
					t.Errorf("%s: the agent wrote the workdir", how.name)
				}
				after, err := testutil.Take(e.vault.Dir)
				must(t, err)
				for _, d := range testutil.Diff(before, after, nil) {
					t.Errorf("%s: the refused run changed the vault: %s", how.name, d)
				}
			}
		})
	}
}
