package gate

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"
)

// benchVault makes a vault with n committed notes in 20-domains/ (set up with
// the git CLI, so the index is a real one). gc.auto=0: a detached auto gc
// would still be writing into .git when the test cleans its temp dir.
func benchVault(b *testing.B, n int) string {
	b.Helper()
	dir := filepath.Join(b.TempDir(), "vault")
	if _, err := vaultInit(dir); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i++ {
		p := filepath.Join(dir, "20-domains", fmt.Sprintf("note-%06d.md", i))
		if err := os.WriteFile(p, []byte(fmt.Sprintf("---\ntype: Fact\n---\nnote %d\n", i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, args := range [][]string{{"add", "20-domains"}, {"commit", "-q", "-m", "bulk"}} {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=b", "-c", "user.email=b@b", "-c", "gc.auto=0"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return dir
}

// BenchmarkPromotionCommit compares one promotion commit (blob, trees on the
// path, commit, ref CAS, work tree file, index entry) with `git add FILE &&
// git commit` on the same vault, and reports the ratio. 100k notes with
// FEDMEM_BENCH_BIG=1.
func BenchmarkPromotionCommit(b *testing.B) {
	sizes := []int{1000, 10000}
	if os.Getenv("FEDMEM_BENCH_BIG") == "1" {
		sizes = append(sizes, 100000)
	}
	// FEDMEM_BENCH_CLONE=DIR,DIR…: clone these vaults (make bench's
	// cached ones, say) instead of generating them.
	var clones []string
	if c := os.Getenv("FEDMEM_BENCH_CLONE"); c != "" {
		clones = strings.Split(c, ",")
		sizes = make([]int, len(clones))
	}
	for i, n := range sizes {
		name := fmt.Sprintf("notes=%d", n)
		if clones != nil {
			name = "clone=" + filepath.Base(clones[i])
		}
		b.Run(name, func(b *testing.B) {
			var v string
			if clones != nil {
				v = filepath.Join(b.TempDir(), "vault")
				if out, err := exec.Command("git", "clone", "-q", "--local", clones[i], v).CombinedOutput(); err != nil {
					b.Fatalf("clone: %v %s", err, out)
				}
			} else {
				v = benchVault(b, n)
			}
			r, err := openRepo(v, filepath.Join(b.TempDir(), "intent"))
			if err != nil {
				b.Fatal(err)
			}
			sig := object.Signature{Name: "fedmem-gate", Email: "gate@fedmem.invalid", When: time.Now()}
			var ru0, ru1 syscall.Rusage
			b.ResetTimer()
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
			start := time.Now()
			for i := 0; i < b.N; i++ {
				branch, head, err := r.Head()
				if err != nil {
					b.Fatal(err)
				}
				ch := []change{{Path: fmt.Sprintf("20-domains/gate-%06d.md", i), Content: []byte(fmt.Sprintf("---\ntype: Fact\n---\ngate %d\n", i))}}
				if _, err := r.CommitChanges(branch, head, ch, sig, "bench\n"); err != nil {
					b.Fatal(err)
				}
				if err := r.Checkout(ch); err != nil {
					b.Fatal(err)
				}
			}
			gate := time.Since(start) / time.Duration(b.N)
			syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
			b.StopTimer()
			// CPU time is steadier than wall time on a shared machine.
			cpu := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) / time.Duration(b.N)
			b.ReportMetric(float64(cpu.Microseconds()), "cpu-us/op")
			const k = 5
			cliStart := time.Now()
			for i := 0; i < k; i++ {
				p := fmt.Sprintf("20-domains/cli-%06d.md", i)
				os.WriteFile(filepath.Join(v, p), []byte(fmt.Sprintf("cli %d\n", i)), 0o644)
				for _, args := range [][]string{{"add", p}, {"commit", "-q", "-m", "cli"}} {
					cmd := exec.Command("git", append([]string{"-C", v, "-c", "user.name=b", "-c", "user.email=b@b", "-c", "gc.auto=0"}, args...)...)
					if out, err := cmd.CombinedOutput(); err != nil {
						b.Fatalf("git %v: %v %s", args, err, out)
					}
				}
			}
			cli := time.Since(cliStart) / k
			b.ReportMetric(float64(gate)/float64(cli), "x-git-cli")
			b.ReportMetric(float64(cli.Microseconds()), "git-cli-us")
		})
	}
}
