package escape

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func limitsProfile(t *testing.T, e *env, body string) string {
	t.Helper()
	p := filepath.Join(e.outDir, "limits.yaml")
	if err := os.WriteFile(p, []byte("name: limits\nextends: default\nlimits:\n"+body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func hits(r *run) []string {
	var out []string
	if xs, ok := r.report["limits_hit"].([]any); ok {
		for _, x := range xs {
			out = append(out, fmt.Sprint(x))
		}
	}
	return out
}

// TestLimitWallTime: the whole sandbox is killed after limits.wall_time,
// fedmem-run exits 124 and reports it; --timeout can only shorten it.
func TestLimitWallTime(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	prof := limitsProfile(t, e, "  wall_time: 1s\n")
	start := time.Now()
	// A child that ignores SIGTERM and a grandchild: both must die.
	r := e.run(t, []string{"--profile", prof, "--timeout", "1h"}, "sh", "-c", "trap '' TERM; sleep 300 & sleep 300")
	if r.code != 124 || !slices.Contains(hits(r), "wall_time") {
		t.Fatalf("exit %d, limits_hit %v; want 124 and wall_time\n%s", r.code, hits(r), r.stderr)
	}
	if d := time.Since(start); d > time.Minute {
		t.Fatalf("the sandbox outlived its wall time by far: %v (a longer --timeout must not loosen the profile)", d)
	}
	// --timeout tightens a profile without a wall time.
	r = e.run(t, []string{"--timeout", "1s"}, "sleep", "300")
	if r.code != 124 {
		t.Fatalf("--timeout 1s: exit %d, want 124", r.code)
	}
}

// TestLimitPidsForkBomb: a fork bomb inside hits limits.pids (EAGAIN), the
// host is unaffected, and the report names the limit.
func TestLimitPidsForkBomb(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	prof := limitsProfile(t, e, "  pids: 32\n  wall_time: 60s\n")
	r := e.run(t, []string{"--profile", prof}, "sh", "-c", `n=0; while [ $n -lt 200 ]; do sleep 30 & n=$((n+1)); done 2>/dev/null; echo spawned; kill $(jobs -p) 2>/dev/null; exit 0`)
	if !slices.Contains(hits(r), "pids") {
		t.Fatalf("limits_hit %v, want pids; exit %d\n%s%s", hits(r), r.code, r.stdout, r.stderr)
	}
	if layers, _ := r.report["layers"].(map[string]any); !strings.Contains(fmt.Sprint(layers["limits"]), "pids=32") {
		t.Errorf("report does not say how pids was enforced: %v", layers["limits"])
	}
}

// TestLimitPidsUnprivileged: without a cgroup (an ordinary user), pids is
// held by RLIMIT_NPROC in the sandbox's user namespace.
func TestLimitPidsUnprivileged(t *testing.T) {
	e := setup(t, layout{name: "own-vault/user", user: true, agentOwned: true})
	prof := limitsProfile(t, e, "  pids: 24\n  wall_time: 60s\n")
	os.Chmod(prof, 0o644)
	r := e.run(t, []string{"--profile", prof}, "python3", "-c", forkBomb)
	out := string(r.stdout)
	i := strings.Index(out, "procs=")
	if i < 0 {
		t.Fatalf("exit %d, no process count:\n%s%s", r.code, out, r.stderr)
	}
	var procs, refused int
	if _, err := fmt.Sscanf(out[i:], "procs=%d refused=%d", &procs, &refused); err != nil || procs > 24 || refused == 0 {
		t.Fatalf("%d processes in the sandbox with limits.pids 24, %d forks refused (exit %d):\n%s%s", procs, refused, r.code, out, r.stderr)
	}
	if layers, _ := r.report["layers"].(map[string]any); !strings.Contains(fmt.Sprint(layers["limits"]), "RLIMIT_NPROC") {
		t.Errorf("report does not say RLIMIT_NPROC: %v", layers["limits"])
	}
}

// TestLimitFileSize: a write past limits.file_size fails; the inbox file
// stops at the limit and the report names it.
func TestLimitFileSize(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	prof := limitsProfile(t, e, "  file_size: 64KiB\n")
	r := e.run(t, []string{"--profile", prof}, "sh", "-c", `head -c 1000000 /dev/zero > "$FEDMEM_INBOX/big.md"`)
	if r.code != 153 || !slices.Contains(hits(r), "file_size") {
		t.Fatalf("exit %d limits_hit %v, want 153 and file_size\n%s", r.code, hits(r), r.stderr)
	}
	fi, err := os.Stat(filepath.Join(e.vault.Dir, "90-inbox", r.session, "big.md"))
	if err != nil || fi.Size() > 64<<10 {
		t.Fatalf("inbox file: %v size %d, want ≤ 64KiB", err, fi.Size())
	}
}

// TestLimitMemory: a memory hog is stopped by the sandbox's memory cgroup;
// the host is unaffected and the report names the limit.
func TestLimitMemory(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	prof := limitsProfile(t, e, "  memory: 64MiB\n  wall_time: 60s\n")
	r := e.run(t, []string{"--profile", prof}, "python3", "-c", "b = bytearray(512 << 20); print('allocated', len(b))")
	if r.code == 0 || strings.Contains(string(r.stdout), "allocated") {
		t.Fatalf("a 512 MiB allocation succeeded under a 64 MiB limit (exit %d)\n%s", r.code, r.stdout)
	}
	if !slices.Contains(hits(r), "memory") {
		t.Fatalf("limits_hit %v, want memory (exit %d)\n%s", hits(r), r.code, r.stderr)
	}
}

// forkBomb forks up to 100 sleeping children, counts the refused forks
// (EAGAIN) and the processes it can see, and exits (pid 1 then ends them).
const forkBomb = `
import os, time
refused = 0
for _ in range(100):
    try:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
    except BlockingIOError:
        refused += 1
print("procs=%d refused=%d" % (len([p for p in os.listdir("/proc") if p.isdigit()]), refused), flush=True)
os._exit(0)
`
