package backends

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fedmem/fedmem/test/testutil"
)

// TestBackendsExplainAndReport: --explain and --report name the backend and
// who enforces what (the runtime for namespaces, root, mounts and cgroups;
// fedmem's init for the verification, Landlock, seccomp and the PTY), and
// --explain says what is missing when containerd does not answer.
func TestBackendsExplainAndReport(t *testing.T) {
	want := map[string][]string{
		"namespace":  {"backend: namespace", "fedmem-run itself makes the namespaces"},
		"runc":       {"backend: runc", "libcontainer", "fedmem-runc", "libcontainer: the namespaces, the root"},
		"containerd": {"backend: containerd", "its shim runs runc", "runc under containerd's shim: the namespaces", "accepts connections"},
	}
	for _, b := range backends {
		t.Run(b, func(t *testing.T) {
			s := prepare(t, b)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			explain := append([]string{"--vault", s.vault.Dir, "--workdir", s.workdir, "--explain"}, s.args...)
			cmd := s.command(ctx)
			cmd.Args = append([]string{s.bins.FedmemRun}, explain...)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("--explain: %v\n%s", err, out)
			}
			for _, w := range append(want[b], "fedmem's init (the sandbox's pid 1): verifies every mount", "Landlock and the seccomp filter") {
				if !strings.Contains(string(out), w) {
					t.Errorf("--explain does not say %q:\n%s", w, out)
				}
			}
			if strings.Contains(string(out), "MISSING") {
				t.Errorf("--explain says something is missing on a machine that has it all:\n%s", out)
			}

			report := filepath.Join(testutil.TempDir(t), "report.json")
			cmd = s.command(ctx, "/bin/true")
			cmd.Args = slices.Insert(cmd.Args, 1, "--report", report)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("run: %v\n%s", err, out)
			}
			raw, err := os.ReadFile(report)
			if err != nil {
				t.Fatal(err)
			}
			var rep struct {
				Layers struct {
					Backend    string   `json:"backend"`
					EnforcedBy []string `json:"enforced_by"`
				} `json:"layers"`
			}
			if err := json.Unmarshal(raw, &rep); err != nil {
				t.Fatalf("%s: %v", report, err)
			}
			if rep.Layers.Backend != b {
				t.Errorf("report: backend %q, want %q", rep.Layers.Backend, b)
			}
			all := strings.Join(rep.Layers.EnforcedBy, "\n")
			for _, w := range append(want[b][:2], "fedmem's init") {
				if !strings.Contains(all, w) {
					t.Errorf("report's enforced_by does not say %q:\n%s", w, all)
				}
			}
		})
	}
	t.Run("containerd-absent", func(t *testing.T) {
		s := prepare(t, "namespace")
		dead := filepath.Join(testutil.TempDir(t), "no-daemon.sock")
		cmd := s.command(context.Background())
		cmd.Args = []string{s.bins.FedmemRun, "--vault", s.vault.Dir, "--workdir", s.workdir, "--explain", "--backend", "containerd", "--containerd-address", dead}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("--explain: %v\n%s", err, out)
		}
		if w := "MISSING: nothing answers at " + dead; !strings.Contains(string(out), w) {
			t.Errorf("--explain does not say %q:\n%s", w, out)
		}
	})
}
