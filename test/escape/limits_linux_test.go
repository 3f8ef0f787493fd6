package escape

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
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
	// A child that ignores SIGTERM and a grandchild: both must die.
	r := e.run(t, []string{"--profile", prof}, "sh", "-c", "trap '' TERM; sleep 300 & sleep 300")
	if r.code != 124 || !slices.Contains(hits(r), "wall_time") {
		t.Fatalf("exit %d, limits_hit %v; want 124 and wall_time\n%s", r.code, hits(r), r.stderr)
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

// TestLooseningFlagsRefused: every command-line flag that could loosen a
// profile refuses to (exit 125, naming the flag and the profile), and the
// same flags tightening it are accepted.
func TestLooseningFlagsRefused(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	prof := limitsProfile(t, e, "  wall_time: 30s\n")
	none := filepath.Join(e.outDir, "none.yaml")
	os.WriteFile(none, []byte("name: offline\nextends: default\nnetwork: none\n"), 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--profile", none, "--network", "host"}, "--network host would loosen profile offline"},
		{[]string{"--profile", none, "--network", "allowlist"}, "--network allowlist would loosen"},
		{[]string{"--profile", prof, "--timeout", "1h"}, "--timeout 1h0m0s would loosen profile limits"},
		{[]string{"--network", "wifi"}, "want none, allowlist, public or host"},
		{[]string{"--network", "host"}, "--network host would loosen profile default (network: public)"},
	} {
		r := e.run(t, c.args, "/bin/true")
		if r.code != 125 || !strings.Contains(string(r.stderr), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 125 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
	// Tightening is accepted, and takes effect.
	// (A server on the host's loopback: reachable with a profile that
	// names network: host, not from a sandbox of its own.)
	hostNet := filepath.Join(e.outDir, "hostnet.yaml")
	os.WriteFile(hostNet, []byte("name: hostnet\nextends: default\nnetwork: host\n"), 0o644)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	probe := "import socket\ntry:\n socket.create_connection(('127.0.0.1', " + port + "), timeout=3); print('REACHED')\nexcept OSError as e: print('BLOCKED', e)"
	if r := e.run(t, []string{"--profile", hostNet}, "python3", "-c", probe); !strings.Contains(string(r.stdout), "REACHED") {
		t.Fatalf("control: a network: host profile does not reach the host's loopback: %s%s", r.stdout, r.stderr)
	}
	for _, n := range []string{"none", "public"} {
		r := e.run(t, []string{"--profile", hostNet, "--network", n}, "python3", "-c", probe)
		if r.code != 0 || !strings.Contains(string(r.stdout), "BLOCKED") {
			t.Errorf("--network %s on a network: host profile: exit %d %s%s", n, r.code, r.stdout, r.stderr)
		}
	}
	if r := e.run(t, []string{"--profile", prof, "--timeout", "1s"}, "sleep", "60"); r.code != 124 {
		t.Errorf("--timeout shorter than the profile's: exit %d, want 124", r.code)
	}
}

// TestLimitInboxBytes: a session that floods its inbox past
// limits.inbox_bytes is ended; the report names the limit and the drafts
// written before stay for the gate.
func TestLimitInboxBytes(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	prof := limitsProfile(t, e, "  inbox_bytes: 100KiB\n  file_size: 64KiB\n  wall_time: 60s\n")
	r := e.run(t, []string{"--profile", prof}, "sh", "-c", `i=0; while [ $i -lt 1000 ]; do head -c 50000 /dev/zero > "$FEDMEM_INBOX/d$i.md"; i=$((i+1)); sleep 0.05; done; sleep 60`)
	if r.code != 137 || !slices.Contains(hits(r), "inbox_bytes") {
		t.Fatalf("exit %d limits_hit %v, want 137 and inbox_bytes\n%s", r.code, hits(r), r.stderr)
	}
	ents, _ := os.ReadDir(filepath.Join(e.vault.Dir, "90-inbox", r.session))
	if len(ents) < 2 || len(ents) > 200 {
		t.Fatalf("%d drafts left in the inbox, want the few written before the limit", len(ents))
	}
}

// notes returns the report's layers.notes and layers.limits as one text.
func notes(r *run) string {
	layers, _ := r.report["layers"].(map[string]any)
	return fmt.Sprint(layers["notes"], layers["limits"])
}

// TestLimitInboxFallocate: space reserved beyond the file's size
// (fallocate --keep-size) has no apparent size and escapes RLIMIT_FSIZE;
// 300 MiB under a 1 MiB cap was the breach. fallocate(2) is refused in the
// sandbox (EOPNOTSUPP), and glibc's posix_fallocate fallback writes, which
// both limits see: the session ends on inbox_bytes. Sizes are bounded
// (at most 64 files of 900 KiB) so a failure cannot fill the host's disk.
func TestLimitInboxFallocate(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	prof := limitsProfile(t, e, "  inbox_bytes: 1MiB\n  file_size: 1MiB\n  wall_time: 60s\n")
	script := `
import os, subprocess, sys, time
inbox = os.environ["FEDMEM_INBOX"]
open(inbox + "/big.md", "w").close()
r = subprocess.run(["fallocate", "--keep-size", "-l", "300M", inbox + "/big.md"], capture_output=True, text=True)
print("keep-size exit=%d %s" % (r.returncode, r.stderr.strip()), flush=True)
for i in range(64):
    fd = os.open("%s/d%d.md" % (inbox, i), os.O_CREAT | os.O_WRONLY, 0o644)
    os.posix_fallocate(fd, 0, 900 << 10)
    os.close(fd)
    print("allocated", i, flush=True)
time.sleep(60)
`
	r := e.run(t, []string{"--profile", prof}, "python3", "-c", script)
	out := string(r.stdout)
	if !strings.Contains(out, "keep-size exit=1") || !strings.Contains(out, "unsupported") {
		t.Errorf("fallocate --keep-size was not refused with EOPNOTSUPP:\n%s", out)
	}
	if r.code != 137 || !slices.Contains(hits(r), "inbox_bytes") || !strings.Contains(notes(r), "over the cap") {
		t.Fatalf("exit %d limits_hit %v notes %s; want 137, inbox_bytes and the reason\n%s%s", r.code, hits(r), notes(r), out, r.stderr)
	}
	if used := duBytes(t, filepath.Join(e.vault.Dir, "90-inbox", r.session)); used > 64<<20 {
		t.Fatalf("inbox holds %d bytes on disk after the session", used)
	}
}

// TestLimitInboxUnreadableDir: an inbox subdirectory the watcher cannot
// list (mode 0300) hid 95 MB from it. Now an entry the watcher cannot
// inspect ends the session (unprivileged caller: the watcher runs as the
// agent's uid), and a root watcher, which can read it, counts what is in
// it (root caller). Either way: exit 137, inbox_bytes, the reason.
// (00300: hide inherits the inbox's set-group-id bit, which GNU chmod
// keeps on a directory unless the mode names it, and seccomp's suid-sgid
// rule refuses a mode with it.)
func TestLimitInboxUnreadableDir(t *testing.T) {
	for _, c := range []struct {
		l      layout
		files  int // of 500 000 bytes, in the hidden directory
		reason string
	}{
		{layout{name: "beside/root"}, 8, "over the cap"},
		// Under the cap: only the directory's unreadability ends it.
		{layout{name: "own-vault/user", user: true, agentOwned: true}, 1, "cannot inspect inbox entry hide"},
	} {
		t.Run(c.l.name, func(t *testing.T) {
			e := setup(t, c.l)
			prof := limitsProfile(t, e, "  inbox_bytes: 1MiB\n  file_size: 1MiB\n  wall_time: 60s\n")
			os.Chmod(prof, 0o644)
			r := e.run(t, []string{"--profile", prof}, "sh", "-c",
				`mkdir "$FEDMEM_INBOX/hide" && i=0; while [ $i -lt `+strconv.Itoa(c.files)+` ]; do head -c 500000 /dev/zero > "$FEDMEM_INBOX/hide/f$i"; i=$((i+1)); done; chmod 00300 "$FEDMEM_INBOX/hide"; echo hidden; sleep 60`)
			if r.code != 137 || !slices.Contains(hits(r), "inbox_bytes") || !strings.Contains(notes(r), c.reason) {
				t.Fatalf("exit %d limits_hit %v notes %s; want 137, inbox_bytes and %q\n%s%s", r.code, hits(r), notes(r), c.reason, r.stdout, r.stderr)
			}
		})
	}
}

// TestLimitInboxSymlinks: symlinks with long targets take a block each
// and no apparent file size; 2000 of them pass a 1 MiB cap.
func TestLimitInboxSymlinks(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	prof := limitsProfile(t, e, "  inbox_bytes: 1MiB\n  wall_time: 60s\n")
	script := `
import os, time
inbox = os.environ["FEDMEM_INBOX"]
target = "/" + "x" * 4000
for i in range(2000):
    os.symlink(target, "%s/l%d" % (inbox, i))
print("linked", flush=True)
time.sleep(60)
`
	r := e.run(t, []string{"--profile", prof}, "python3", "-c", script)
	if r.code != 137 || !slices.Contains(hits(r), "inbox_bytes") || !strings.Contains(notes(r), "over the cap") {
		t.Fatalf("exit %d limits_hit %v notes %s; want 137, inbox_bytes and the reason\n%s%s", r.code, hits(r), notes(r), r.stdout, r.stderr)
	}
}

// TestLimitTmpBytes: /tmp and /dev/shm are tmpfs capped at
// limits.tmp_bytes: a flood stops with ENOSPC at the cap (in memory, never
// on the host's disk), fedmem-run ends the session and reports tmp_bytes
// with the full directory. Without the cap the flood runs to 64 MiB.
func TestLimitTmpBytes(t *testing.T) {
	for _, l := range []layout{{name: "beside/root"}, {name: "own-vault/user", user: true, agentOwned: true}} {
		t.Run(l.name, func(t *testing.T) { testLimitTmpBytes(t, l) })
	}
}

func testLimitTmpBytes(t *testing.T, l layout) {
	e := setup(t, l)
	prof := limitsProfile(t, e, "  tmp_bytes: 8MiB\n  wall_time: 60s\n")
	os.Chmod(prof, 0o644)
	for _, d := range []string{"/tmp", "/dev/shm"} {
		script := `
import errno, sys, time
d, n = sys.argv[1], 0
try:
    with open(d + "/flood", "wb") as f:
        for _ in range(64):
            f.write(b"\0" * (1 << 20))
            f.flush()
            n += 1
    print(d, "wrote", n, "MiB", flush=True)
except OSError as e:
    print(d, "stopped", errno.errorcode[e.errno], "after", n, "MiB", flush=True)
time.sleep(60)
`
		r := e.run(t, []string{"--profile", prof}, "python3", "-c", script, d)
		out := string(r.stdout)
		if !strings.Contains(out, d+" stopped ENOSPC after ") {
			t.Errorf("%s flood not stopped by ENOSPC:\n%s%s", d, out, r.stderr)
		}
		if r.code != 137 || !slices.Contains(hits(r), "tmp_bytes") || !strings.Contains(notes(r), "tmp_bytes: "+d+" is full") {
			t.Errorf("%s: exit %d limits_hit %v notes %s; want 137, tmp_bytes and the reason\n%s", d, r.code, hits(r), notes(r), r.stderr)
		}
		if !strings.Contains(notes(r), "tmp_bytes=8388608") {
			t.Errorf("report does not say how tmp_bytes is held: %s", notes(r))
		}
	}
}

// duBytes is the allocated size of a tree (du), the test's own count.
func duBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var total int64
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				total += st.Blocks * 512
			}
		}
		return nil
	})
	return total
}
