package escape

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fedmem/fedmem/test/testutil"
)

// cpuShareAgent prints its /proc/self/cgroup, tries to move itself out of
// its cpu cgroup (into the hierarchy's root and into fedmem.slice itself)
// and prints each outcome, then says "waiting" and waits for a line on
// stdin (a line, not EOF: containerd's stdin relay does not pass EOF on).
const cpuShareAgent = `
import errno, os, sys
for t in ["/sys/fs/cgroup/cpu/cgroup.procs", "/sys/fs/cgroup/cpu/tasks",
          "/sys/fs/cgroup/cpu/fedmem.slice/cgroup.procs", "/sys/fs/cgroup/cgroup.procs",
          "/sys/fs/cgroup/unified/cgroup.procs"]:
    try:
        with open(t, "w") as f:
            f.write(str(os.getpid()))
        print("MOVED", t, flush=True)
    except OSError as e:
        print("refused", t, errno.errorcode.get(e.errno, e.errno), flush=True)
print("waiting", flush=True)
sys.stdin.readline()
`

// cpuCgroupOf is the cpu line's path of a /proc/PID/cgroup text ("" none).
func cpuCgroupOf(text string) string {
	for _, l := range strings.Split(text, "\n") {
		f := strings.SplitN(l, ":", 3)
		if len(f) != 3 {
			continue
		}
		for _, c := range strings.Split(f[1], ",") {
			if c == "cpu" {
				return f[2]
			}
		}
		if f[0] == "0" && f[1] == "" && cpuDir() == "" { // unified host
			return f[2]
		}
	}
	return ""
}

// cpuDir is the host's cpu hierarchy: the v1 one, else the unified root
// when it offers cpu ("" neither).
func cpuDir() string {
	for _, d := range []string{"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"} {
		if _, err := os.Stat(filepath.Join(d, "cgroup.procs")); err == nil {
			return d
		}
	}
	if b, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers"); err == nil && strings.Contains(" "+string(b)+" ", " cpu ") {
		return "/sys/fs/cgroup"
	}
	return ""
}

// TestCPUSessionCgroup: every session's agent is in a cpu cgroup of its
// own under the one fedmem.slice (all sessions weigh as one sibling of the
// gate and the host; a task in a non-root cpu cgroup is not autogrouped),
// even with no limits.cpu; the cgroup goes with the session; and the agent
// cannot move itself out (the cgroup filesystem is read-only inside).
func TestCPUSessionCgroup(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	// The default profile has no limits.cpu; with one, the same cgroup
	// also holds the quota.
	t.Run("default", func(t *testing.T) { cpuSessionCgroup(t, e, "default", "") })
	prof := limitsProfile(t, e, "  cpu: 0.5\n")
	t.Run("limits.cpu", func(t *testing.T) { cpuSessionCgroup(t, e, prof, "50000") })
}

func cpuSessionCgroup(t *testing.T, e *env, profile, quota string) {
	dir := cpuDir()
	if dir == "" {
		t.Fatal("no cpu cgroup hierarchy on this host: the session would run unpooled (the report says so); this test needs one")
	}
	tok := make([]byte, 8)
	rand.Read(tok)
	token := hex.EncodeToString(tok)
	t.Logf("token %s, cpu hierarchy %s", token, dir)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	report := filepath.Join(e.outDir, "cpushare.json")
	cmd := e.command(ctx, report, []string{"--profile", profile, "--network", "none"}, "python3", "-c", cpuShareAgent, token)
	stdin, err := cmd.StdinPipe()
	must(t, err)
	out, err := cmd.StdoutPipe()
	must(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	must(t, cmd.Start())
	var lines []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if sc.Text() == "waiting" {
			break
		}
	}
	if len(lines) == 0 || lines[len(lines)-1] != "waiting" {
		stdin.Close()
		cmd.Wait()
		t.Fatalf("agent did not start: %q\n%s", lines, stderr.Bytes())
	}

	// The agent, seen from the host: python3 with the token.
	agent := 0
	ents, _ := os.ReadDir("/proc")
	for _, d := range ents {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, _ := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		argv := strings.Split(string(b), "\x00")
		if len(argv) > 2 && strings.HasSuffix(argv[0], "python3") && slices.Contains(argv, token) {
			agent = pid
		}
	}
	var cg, inside string
	if agent == 0 {
		t.Errorf("no host process runs the agent (python3 … %s)", token)
	} else {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(agent) + "/cgroup")
		must(t, err)
		cg = cpuCgroupOf(string(b))
		t.Logf("agent host pid %d, cpu cgroup %s", agent, cg)
		if m, _ := filepath.Match("/fedmem.slice/fedmem-*", cg); !m {
			t.Errorf("agent's cpu cgroup is %q, want /fedmem.slice/fedmem-<session>", cg)
		} else {
			tasks, err := os.ReadFile(filepath.Join(dir, cg, "tasks"))
			if err != nil {
				tasks, err = os.ReadFile(filepath.Join(dir, cg, "cgroup.threads"))
			}
			must(t, err)
			if !slices.Contains(strings.Fields(string(tasks)), strconv.Itoa(agent)) {
				t.Errorf("%s does not list the agent %d: %q", filepath.Join(dir, cg), agent, tasks)
			}
			inside = filepath.Join(dir, cg)
			if quota != "" {
				if got, _ := os.ReadFile(filepath.Join(inside, "cpu.cfs_quota_us")); strings.TrimSpace(string(got)) != quota {
					t.Errorf("%s/cpu.cfs_quota_us = %q, want %s (limits.cpu)", inside, got, quota)
				}
			}
		}
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "MOVED") {
			t.Errorf("BREACH the agent moved itself out of its cpu cgroup: %s", l)
		}
		if f := strings.Fields(l); len(f) == 3 && f[0] == "refused" && f[2] != "EROFS" && f[2] != "ENOENT" {
			// Read-only cgroupfs (EROFS), or not mounted there at all.
			t.Errorf("moving out %s refused with %s, want EROFS (the cgroup filesystem is read-only inside)", f[1], f[2])
		}
	}
	t.Logf("agent said: %q", lines)
	if agent != 0 {
		// After the attempts, still where fedmem-run put it.
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(agent) + "/cgroup")
		if now := cpuCgroupOf(string(b)); now != cg {
			t.Errorf("BREACH the agent's cpu cgroup changed from %s to %s", cg, now)
		}
	}
	stdin.Write([]byte("end\n"))
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("fedmem-run: %v\n%s", err, stderr.Bytes())
	}
	var rep map[string]any
	b, err := os.ReadFile(report)
	must(t, err)
	must(t, json.Unmarshal(b, &rep))
	session, _ := rep["session"].(string)
	// The namespace backend's fedmem-<session>; a container backend's
	// fedmem-<session>-<hex> (its container id).
	if b := filepath.Base(cg); cg != "" && b != "fedmem-"+session && (testutil.Backend() == "namespace" || !strings.HasPrefix(b, "fedmem-"+session+"-")) {
		t.Errorf("cpu cgroup %s is not the session %s's", cg, session)
	}
	if inside != "" {
		if _, err := os.Stat(inside); !os.IsNotExist(err) {
			t.Errorf("session cgroup %s still there after the session (stat: %v)", inside, err)
		}
	}
	notes, _ := json.Marshal(rep["layers"].(map[string]any)["limits"])
	if !strings.Contains(string(notes), "cpu: sessions share fedmem.slice's weight") {
		t.Errorf("layers.limits does not say the cpu pooling: %s", notes)
	}
}

// TestCPUShareUnprivileged: where the caller cannot make a cpu cgroup (a
// non-root caller on a cgroup v1 host), the session still runs and the
// report says it is not pooled, and why.
func TestCPUShareUnprivileged(t *testing.T) {
	e := setup(t, layout{name: "beside/user", gateOwned: true, user: true})
	r := e.run(t, nil, "/bin/true")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0: an unpooled CPU share must not fail the launch\n%s", r.code, r.stderr)
	}
	notes, _ := json.Marshal(r.report["layers"].(map[string]any)["limits"])
	t.Logf("layers.limits: %s", notes)
	n := string(notes)
	if !strings.Contains(n, "cpu: sessions NOT pooled under fedmem.slice (cpu: ") && !strings.Contains(n, "cpu: sessions share fedmem.slice's weight") && !strings.Contains(n, "cpu: the session has its own cpu cgroup") {
		t.Errorf("layers.limits says nothing of the CPU share: %s", n)
	}
}
