package gate

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestPromotePassProfile is a measuring aid, not a check: with
// FEDMEM_PROMOTE_PASS=N it promotes N drafts from 10 sessions in one pass
// on a vault of 1000 notes and logs promotions per second (run it under
// go test -cpuprofile).
func TestPromotePassProfile(t *testing.T) {
	var n int
	if _, err := fmt.Sscan(os.Getenv("FEDMEM_PROMOTE_PASS"), &n); err != nil || n <= 0 {
		t.Skip("measuring aid (FEDMEM_PROMOTE_PASS=N)")
	}
	v := trustVault(t)
	for i := 0; i < 1000; i++ {
		p := filepath.Join(v, "20-domains", fmt.Sprintf("note-%06d.md", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(fmt.Sprintf("---\ntype: Fact\n---\nnote %d\n", i)), 0o644)
	}
	gitCLI(t, v, "add", "20-domains")
	gitCLI(t, v, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-q", "-m", "bulk")
	for i := 0; i < n; i++ {
		sd := session(t, v, fmt.Sprintf("s-%02d", i%10))
		put(t, sd, fmt.Sprintf("d%04d.md", i), fmt.Sprintf("---\ntype: Fact\ntitle: Throughput fact %d\nconfidence: verified\nrisk: low\nsources:\n  - resource: 10-projects/src.md\n---\n\nFact number %d, written by make bench.\n", i, i))
	}
	g, err := Open(Options{Vault: v, AllowSameUser: true})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	t0 := time.Now()
	s, err := g.Once()
	d := time.Since(t0)
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	if err != nil || len(s.Errors) > 0 {
		t.Fatal(err, s.Errors)
	}
	t.Logf("%d promoted of %d in %v: %.1f/s; CPU %v (%.2f ms a promotion, %.0f/s per core)", s.Promoted, len(s.Decisions), d, float64(s.Promoted)/d.Seconds(),
		cpu, float64(cpu.Microseconds())/1000/float64(s.Promoted), float64(s.Promoted)/cpu.Seconds())
	if os.Getenv("FEDMEM_PROMOTE_KEEP") != "" {
		t.Logf("vault %s", v)
		exec.Command("cp", "-a", v, os.Getenv("FEDMEM_PROMOTE_KEEP")).Run()
		out, _ := os.ReadDir(filepath.Join(v, ".git", "objects", "pack"))
		for _, e := range out {
			fi, _ := e.Info()
			t.Logf("%s %d", e.Name(), fi.Size())
		}
	}
	checkRepo(t, v)
}
