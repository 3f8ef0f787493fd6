package sandbox

import (
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/mounts"
)

// inboxMaxEntries bounds the entries one scan visits: a flood of entries is
// a flood, whatever their size.
const inboxMaxEntries = 100000

// inboxCapInterval is how often the watcher scans the inbox.
const inboxCapInterval = 250 * time.Millisecond

// watchInboxCap scans the session's inbox every inboxCapInterval and calls
// over, once, with the reason, when the inbox holds more than max bytes or
// cannot be inspected. It ends when stop is closed.
//
// The bytes counted are, for every inode of every type, the larger of its
// apparent size and its allocated blocks (st_blocks × 512): space reserved
// with fallocate(FALLOC_FL_KEEP_SIZE) has no apparent size, a sparse file
// no blocks, a long symlink target or a large directory takes blocks of its
// own. An entry the watcher cannot open or stat (a directory the agent made
// mode 0300, an error other than a race with its removal) ends the session:
// what it cannot see it cannot count (fail closed).
func watchInboxCap(inbox string, max int64, stop <-chan struct{}, over func(reason string)) {
	t := time.NewTicker(inboxCapInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		used, err := inboxUsage(inbox, max)
		switch {
		case err != nil:
			over(err.Error())
			return
		case used > max:
			over(fmt.Sprintf("the inbox holds %d bytes (allocated or apparent, every entry), over the cap of %d", used, max))
			return
		}
	}
}

// errInboxFlood is returned when a scan meets more than inboxMaxEntries.
var errInboxFlood = fmt.Errorf("more than %d entries in the inbox", inboxMaxEntries)

// inboxUsage returns the bytes the inbox tree holds. It never follows a
// symbolic link (every directory is opened O_NOFOLLOW relative to its
// parent's descriptor) and stops early once the count passes max.
func inboxUsage(inbox string, max int64) (int64, error) {
	fd, err := unix.Open(inbox, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, fmt.Errorf("cannot inspect the inbox %s: %w", inbox, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return 0, fmt.Errorf("cannot inspect the inbox %s: %w", inbox, err)
	}
	u := usageCounter{max: max}
	u.add(&st)
	err = u.dir(fd, ".")
	return u.total, err
}

type usageCounter struct {
	total   int64
	entries int
	max     int64
}

func (u *usageCounter) add(st *unix.Stat_t) {
	b := st.Blocks * 512
	if st.Size > b {
		b = st.Size
	}
	u.total += b
}

// dir counts the entries of the directory open at fd (rel names it for
// messages) and closes fd.
func (u *usageCounter) dir(fd int, rel string) error {
	defer unix.Close(fd)
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return fmt.Errorf("cannot list inbox entry %s: %w", rel, err)
		}
		if n <= 0 {
			return nil
		}
		_, _, names := unix.ParseDirent(buf[:n], -1, nil)
		for _, name := range names {
			if u.entries++; u.entries > inboxMaxEntries {
				return errInboxFlood
			}
			p := filepath.Join(rel, name)
			var st unix.Stat_t
			if err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				if errors.Is(err, unix.ENOENT) {
					continue // removed since the listing
				}
				return fmt.Errorf("cannot inspect inbox entry %s: %w", p, err)
			}
			u.add(&st)
			if u.total > u.max {
				return nil
			}
			if st.Mode&unix.S_IFMT != unix.S_IFDIR {
				continue
			}
			cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				if errors.Is(err, unix.ENOENT) {
					continue
				}
				return fmt.Errorf("cannot inspect inbox entry %s: %w", p, err)
			}
			if err := u.dir(cfd, p); err != nil || u.total > u.max {
				return err
			}
		}
	}
}

// withSize adds a tmpfs size= option (limits.tmp_bytes) to opts; a write
// past it fails with ENOSPC. Without one a tmpfs may grow to half of RAM.
func withSize(opts string, size int64) string {
	if size <= 0 {
		return opts
	}
	return fmt.Sprintf("%s,size=%d", opts, size)
}

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
			t := time.NewTicker(inboxCapInterval)
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
