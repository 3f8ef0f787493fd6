package backends

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fedmem/fedmem/test/testutil"
)

// waitFor polls cond until it holds or the deadline passes; what it waits
// on is the system's state, not a time.
func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestKillNineCleansUp: fedmem-run killed with SIGKILL while the agent
// runs leaves no container behind — the helper sees its control pipe
// close and kills and deletes the container (runc: its libcontainer state;
// containerd: the container, its task and its snapshot).
func TestKillNineCleansUp(t *testing.T) {
	for _, b := range []string{"runc", "containerd"} {
		t.Run(b, func(t *testing.T) {
			s := prepare(t, b)
			var ctr string
			if b == "containerd" {
				p, err := exec.LookPath("ctr")
				if bin := os.Getenv("FEDMEM_CONTAINERD_BIN"); bin != "" {
					p, err = filepath.Join(bin, "ctr"), nil
				}
				if err != nil {
					t.Skip("ctr not in PATH: cannot list containerd's containers")
				}
				ctr = p
			}
			list := func() string {
				if b == "runc" {
					ents, _ := os.ReadDir("/run/fedmem/runc/containers")
					var names []string
					for _, e := range ents {
						if strings.Contains(e.Name(), "fedmem-") {
							names = append(names, e.Name())
						}
					}
					return strings.Join(names, " ")
				}
				sock := s.args[len(s.args)-1]
				out, _ := exec.Command(ctr, "--address", sock, "-n", "fedmem", "containers", "ls", "-q").Output()
				return strings.TrimSpace(string(out))
			}
			bundles := func() string {
				ents, _ := os.ReadDir("/run/fedmem/" + b + "/bundles")
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				return strings.Join(names, " ")
			}
			events := filepath.Join(testutil.TempDir(t), "events.jsonl")
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := s.command(ctx, "/bin/sleep", "600")
			cmd.Args = append(cmd.Args[:1], append([]string{"--events", events}, cmd.Args[1:]...)...)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the agent to start", time.Minute, func() bool {
				b, _ := os.ReadFile(events)
				return strings.Contains(string(b), `"started"`)
			})
			// Other sessions (other tests, other users of the daemon and of
			// /run/fedmem) may come and go meanwhile: only this session's
			// container and bundle count.
			raw, _ := os.ReadFile(events)
			var session string
			if _, rest, ok := strings.Cut(string(raw), `"session":"`); ok {
				session, _, _ = strings.Cut(rest, `"`)
			}
			if session == "" {
				t.Fatalf("no session in the events:\n%s", raw)
			}
			mine := func(names string) bool { return strings.Contains(names, "fedmem-"+session+"-") }
			if !mine(list()) || !mine(bundles()) {
				t.Fatalf("session %s: no container (%q) or bundle (%q) listed while the agent runs: the check cannot fail", session, list(), bundles())
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			waitFor(t, "the container to be removed", time.Minute, func() bool { return !mine(list()) })
			// fedmem-run's deferred cleanup never ran: the helper removes
			// the bundle it was handed.
			waitFor(t, "the bundle to be removed", time.Minute, func() bool { return !mine(bundles()) })
		})
	}
}
