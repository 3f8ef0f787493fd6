package sandbox

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/sandbox/inboxcap"
)

// tmpNotes says how limits.tmp_bytes is enforced, for the report.
func tmpNotes(pl *mounts.Plan) []string {
	for _, m := range pl.Mounts {
		if m.Kind == mounts.Tmpfs && m.Target == "/tmp" && m.Size > 0 {
			return []string{fmt.Sprintf("tmp_bytes=%d (tmpfs size of /tmp and of /dev/shm: ENOSPC past it)", m.Size)}
		}
	}
	return nil
}

// tmpCap watches the sandbox's /tmp and /dev/shm (tmpfs capped at
// limits.tmp_bytes) from fedmem-run and ends the session when one is full:
// the kernel already refuses the write (ENOSPC); this makes the limit a
// reported end of the session, like the others, instead of an error some
// program may swallow.
type tmpCap struct {
	full   atomic.Bool
	reason atomic.Value // string
	once   sync.Once
	stop   chan struct{}
}

// start opens both tmpfs through /proc/PID/root of the sandbox's pid 1
// (after pivot_root: call it once the init reports "started") and polls
// them. The descriptors keep the file systems for statfs only; they are
// O_PATH and never reach the agent.
func (c *tmpCap) start(pl *mounts.Plan, pid int, kill func()) {
	if tmpNotes(pl) == nil {
		return
	}
	c.once.Do(func() {
		c.stop = make(chan struct{})
		var fds []int
		var names []string
		for _, d := range []string{"tmp", "dev/shm"} {
			fd, err := unix.Open(fmt.Sprintf("/proc/%d/root/%s", pid, d), unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err == nil {
				fds, names = append(fds, fd), append(names, "/"+d)
			}
		}
		go func() {
			defer func() {
				for _, fd := range fds {
					unix.Close(fd)
				}
			}()
			t := time.NewTicker(inboxcap.Interval)
			defer t.Stop()
			for {
				select {
				case <-c.stop:
					return
				case <-t.C:
				}
				for i, fd := range fds {
					var st unix.Statfs_t
					if unix.Fstatfs(fd, &st) == nil && st.Type == unix.TMPFS_MAGIC && st.Blocks > 0 && st.Bavail == 0 {
						c.reason.Store(fmt.Sprintf("%s is full (%d bytes, limits.tmp_bytes)", names[i], int64(st.Blocks)*st.Bsize))
						c.full.Store(true)
						kill()
						return
					}
				}
			}
		}()
	})
}

// finish stops the watch and reports a hit in res.
func (c *tmpCap) finish(res *Result) {
	if c.stop != nil {
		close(c.stop)
	}
	if !c.full.Load() {
		return
	}
	res.LimitsHit = append(res.LimitsHit, "tmp_bytes")
	res.Layers.Notes = append(res.Layers.Notes, fmt.Sprintf("tmp_bytes: %v", c.reason.Load()))
	if res.ExitCode < 0 {
		res.ExitCode, res.Signal = 128+int(unix.SIGKILL), int(unix.SIGKILL)
	}
}
