package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// cgroupV1Root is where the kernel's cgroup v1 hierarchies are mounted.
const cgroupV1Root = "/sys/fs/cgroup"

// sessionCgroup holds a session's processes in per-controller cgroup v1
// directories (pids, memory) so that the limits cover the whole sandbox,
// whatever uid it runs as. Root can create them; an ordinary user normally
// cannot, and then the caller falls back to rlimits (pids) or refuses
// (memory) — never a silently weaker sandbox.
type sessionCgroup struct {
	dirs map[string]string // controller → directory
}

// newSessionCgroup creates the cgroups for the limits that are set. It
// returns nil, nil when no limit needs one.
func newSessionCgroup(session string, pids int, memory int64) (*sessionCgroup, error) {
	want := map[string][][2]string{}
	if pids > 0 {
		want["pids"] = [][2]string{{"pids.max", strconv.Itoa(pids)}}
	}
	if memory > 0 {
		m := strconv.FormatInt(memory, 10)
		want["memory"] = [][2]string{{"memory.limit_in_bytes", m}, {"memory.memsw.limit_in_bytes", m}}
	}
	if len(want) == 0 {
		return nil, nil
	}
	cg := &sessionCgroup{dirs: map[string]string{}}
	for ctrl, files := range want {
		base := filepath.Join(cgroupV1Root, ctrl)
		if fi, err := os.Stat(filepath.Join(base, "cgroup.procs")); err != nil || fi.IsDir() {
			cg.remove()
			return nil, fmt.Errorf("no cgroup v1 %s hierarchy at %s", ctrl, base)
		}
		dir := filepath.Join(base, "fedmem-"+session)
		if err := os.Mkdir(dir, 0o755); err != nil {
			cg.remove()
			return nil, fmt.Errorf("create cgroup %s: %w", dir, err)
		}
		cg.dirs[ctrl] = dir
		for _, f := range files {
			err := os.WriteFile(filepath.Join(dir, f[0]), []byte(f[1]), 0o644)
			if err != nil && !(f[0] == "memory.memsw.limit_in_bytes" && errors.Is(err, os.ErrNotExist)) {
				cg.remove()
				return nil, fmt.Errorf("set %s/%s: %w", dir, f[0], err)
			}
		}
	}
	return cg, nil
}

// add moves a process (all its threads) into every session cgroup.
func (cg *sessionCgroup) add(pid int) error {
	for _, dir := range cg.dirs {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("join cgroup %s: %w", dir, err)
		}
	}
	return nil
}

// hits names the limits the kernel enforced during the session.
func (cg *sessionCgroup) hits() []string {
	var out []string
	if dir, ok := cg.dirs["pids"]; ok {
		if b, err := os.ReadFile(filepath.Join(dir, "pids.events")); err == nil {
			if f := strings.Fields(string(b)); len(f) == 2 && f[0] == "max" && f[1] != "0" {
				out = append(out, "pids")
			}
		}
	}
	if dir, ok := cg.dirs["memory"]; ok {
		hit := false
		for _, f := range []string{"memory.failcnt", "memory.memsw.failcnt"} {
			if b, err := os.ReadFile(filepath.Join(dir, f)); err == nil && strings.TrimSpace(string(b)) != "0" {
				hit = true
			}
		}
		if b, err := os.ReadFile(filepath.Join(dir, "memory.oom_control")); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if f := strings.Fields(l); len(f) == 2 && f[0] == "oom_kill" && f[1] != "0" {
					hit = true
				}
			}
		}
		if hit {
			out = append(out, "memory")
		}
	}
	return out
}

// remove deletes the cgroups (they are empty once the pid namespace is gone).
func (cg *sessionCgroup) remove() {
	for _, dir := range cg.dirs {
		for i := 0; i < 50; i++ {
			if err := os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
				break
			}
			// The last exiting processes may still be leaving.
			time.Sleep(10 * time.Millisecond)
		}
	}
}
