package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// cgroupKill ends every process of a container's own cgroup at once, from
// fedmem-run, without waiting for anything in the container to run.
//
// A SIGKILL to the container's init alone is not immediate: the kernel
// kills the rest of its pid namespace only once the dying init itself gets
// a CPU and reaches exit (zap_pid_ns_processes), and on a loaded host the
// agent's writers keep running until then (a flood of inbox writers put
// 32 MB on disk past a 100 KiB cap that way, under containerd). Through
// the cgroup each process gets its SIGKILL from here:
//   - cgroup v2: "1" into cgroup.kill (the kernel signals every process
//     of the subtree and refuses forks into it while it does);
//   - cgroup v1: the freezer cgroup is frozen (a new child is frozen as
//     it forks), each of its processes gets SIGKILL through a pidfd, then
//     it is thawed, and they all die as they wake.
//
// The cgroup is the init's, read from /proc/PID/cgroup while fedmem-run
// holds a pidfd of it, and is used only if its path names the container
// (id): never fedmem-run's own cgroup or a parent of it.
type cgroupKill struct {
	v2     string // cgroup.kill of the container's cgroup (v2)
	frozen string // the container's freezer cgroup directory (v1)
	rel    string // its path in the freezer hierarchy, as /proc/PID/cgroup says
}

// containerCgroup finds the cgroup of the container's init (pid, with
// pidfd open on it) for cgroupKill; nil when it cannot be found or does
// not name the container.
func containerCgroup(pid, pidfd int, id string) *cgroupKill {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil || unix.PidfdSendSignal(pidfd, 0, nil, 0) != nil {
		return nil // the read must be of the process the pidfd holds
	}
	own := func(p string) bool {
		return p != "" && p != "/" && !strings.Contains(p, "..") && strings.Contains(filepath.Base(p), id)
	}
	var st unix.Statfs_t
	v2 := unix.Statfs("/sys/fs/cgroup", &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || !own(f[2]) {
			continue
		}
		switch {
		case v2 && f[0] == "0" && f[1] == "":
			p := filepath.Join("/sys/fs/cgroup", f[2], "cgroup.kill")
			if _, err := os.Stat(p); err == nil {
				return &cgroupKill{v2: p}
			}
		case !v2 && hasController(f[1], "freezer"):
			d := filepath.Join("/sys/fs/cgroup/freezer", f[2])
			if _, err := os.Stat(filepath.Join(d, "freezer.state")); err == nil {
				return &cgroupKill{frozen: d, rel: f[2]}
			}
		}
	}
	return nil
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// kill sends SIGKILL to every process of the cgroup (see cgroupKill).
func (c *cgroupKill) kill() {
	if c == nil {
		return
	}
	if c.v2 != "" {
		_ = os.WriteFile(c.v2, []byte("1"), 0)
		return
	}
	state := filepath.Join(c.frozen, "freezer.state")
	if os.WriteFile(state, []byte("FROZEN"), 0) != nil {
		return
	}
	// Thawed whatever happens: a frozen process would never get to die.
	defer os.WriteFile(state, []byte("THAWED"), 0)
	procs, err := os.ReadFile(filepath.Join(c.frozen, "cgroup.procs"))
	if err != nil {
		return
	}
	for _, s := range strings.Fields(string(procs)) {
		pid, err := strconv.Atoi(s)
		if err != nil || pid <= 0 {
			continue
		}
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue
		}
		// Still the container's process (the pid was not reused since
		// the listing): the pidfd is taken first, then checked.
		if cg, err := os.ReadFile("/proc/" + s + "/cgroup"); err == nil && inFreezer(cg, c.rel) {
			_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		}
		unix.Close(fd)
	}
}

// inFreezer says whether a /proc/PID/cgroup text puts it in the freezer
// cgroup rel.
func inFreezer(cg []byte, rel string) bool {
	for _, line := range strings.Split(string(cg), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) == 3 && hasController(f[1], "freezer") {
			return f[2] == rel
		}
	}
	return false
}
