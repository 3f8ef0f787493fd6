package inboxcap

import (
	"errors"
	"fmt"
	"os"
	"path"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// inboxMaxEntries bounds the entries the inbox may hold: a flood of entries
// is a flood, whatever their size.
const inboxMaxEntries = 100000

// Interval is how often the watcher walks the whole inbox, as a backstop
// to its inotify events (writes through mmap make none), and how often
// package sandbox checks /tmp and /dev/shm.
const Interval = 250 * time.Millisecond

// inboxEvents are the inotify events that can change what the inbox holds.
const inboxEvents = unix.IN_CREATE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_MOVED_TO |
	unix.IN_MOVED_FROM | unix.IN_DELETE | unix.IN_ATTRIB | unix.IN_ONLYDIR | unix.IN_EXCL_UNLINK

// Watch watches the session's inbox and calls over, once, with the
// reason, as soon as the inbox holds more than max bytes or cannot be
// inspected. It ends when stop is closed.
//
// The bytes counted are, for every inode of every type, the larger of its
// apparent size and its allocated blocks (st_blocks × 512): space reserved
// with fallocate(FALLOC_FL_KEEP_SIZE) has no apparent size, a sparse file
// no blocks, a long symlink target or a large directory takes blocks of its
// own. An inode with several names in the inbox counts once. An entry the
// watcher cannot open or stat (a directory the agent made mode 0300, an
// error other than a race with its removal) ends the session: what it
// cannot see it cannot count (fail closed).
//
// The count is event-driven: every directory of the inbox is watched with
// inotify (added as it appears, opened without following links), and each
// event re-stats only the entry it names, against a per-entry and per-inode
// map, so a write costs O(depth), not a walk. A lost event queue
// (IN_Q_OVERFLOW), a directory moved or an event for an unknown directory
// triggers a full walk, and a full walk also runs every Interval as
// a backstop. Without inotify (no instance left) the watcher only walks.
func Watch(inbox string, max int64, stop <-chan struct{}, over func(reason string)) {
	watchFrom(&inboxWatch{inbox: inbox, max: max, ifd: -1, root: -1}, stop, over)
}

// WatchDir is Watch of the directory open at root (named inbox in the
// reasons), never of whatever its name leads to: the session folder
// fedmem-run made, which the owner of 90-inbox/ may rename away and
// replace by name at any time. WatchDir owns root and closes it.
func WatchDir(root int, inbox string, max int64, stop <-chan struct{}, over func(reason string)) {
	watchFrom(&inboxWatch{inbox: inbox, max: max, ifd: -1, root: root}, stop, over)
}

func watchFrom(w *inboxWatch, stop <-chan struct{}, over func(reason string)) {
	inbox, max := w.inbox, w.max
	defer w.close()
	if fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK); err == nil {
		w.ifd = fd
		w.file = os.NewFile(uintptr(fd), "inotify") // non-blocking: reads go through the poller
		go func() {
			<-stop
			_ = w.file.SetReadDeadline(time.Unix(1, 0))
		}()
	}
	check := func(err error) bool {
		switch {
		case err != nil:
			over(err.Error())
			return true
		case w.total > max:
			over(fmt.Sprintf("the inbox holds %d bytes (allocated or apparent, every entry), over the cap of %d", w.total, max))
			return true
		}
		return false
	}
	if check(w.full()) {
		return
	}
	buf := make([]byte, 64<<10)
	last := time.Now()
	for {
		select {
		case <-stop:
			return
		default:
		}
		if w.file == nil {
			select {
			case <-stop:
				return
			case <-time.After(Interval):
			}
			if check(w.full()) {
				return
			}
			continue
		}
		_ = w.file.SetReadDeadline(last.Add(Interval))
		n, err := w.file.Read(buf)
		if err != nil || time.Since(last) >= Interval {
			if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
				over(fmt.Sprintf("cannot watch the inbox %s: %v", inbox, err))
				return
			}
			select {
			case <-stop:
				return
			default:
			}
			last = time.Now()
			if check(w.full()) {
				return
			}
			if err != nil {
				continue
			}
		}
		if check(w.events(buf[:n])) {
			return
		}
	}
}

// inoKey names an inode.
type inoKey struct{ dev, ino uint64 }

// inboxWatch is the watcher's state: the inotify watches and what it has
// counted.
type inboxWatch struct {
	inbox string
	max   int64
	ifd   int
	file  *os.File
	root  int // the inbox, opened O_NOFOLLOW; -1 until the first walk

	wds   map[int32]string  // watch → the directory it watches, relative to the inbox
	names map[string]inoKey // entry (relative path, "." for the inbox) → inode
	refs  map[inoKey]int    // inode → its names in the inbox
	size  map[inoKey]int64  // inode → bytes counted
	total int64
}

func (w *inboxWatch) close() {
	if w.file != nil {
		w.file.Close()
	}
	if w.root >= 0 {
		unix.Close(w.root)
	}
}

// errInboxFlood is returned when the inbox holds more than inboxMaxEntries.
var errInboxFlood = fmt.Errorf("more than %d entries in the inbox", inboxMaxEntries)

func inboxBytes(st *unix.Stat_t) int64 {
	b := st.Blocks * 512
	if st.Size > b {
		b = st.Size
	}
	return b
}

// set records that rel names the inode st describes, with its bytes.
func (w *inboxWatch) set(rel string, st *unix.Stat_t) error {
	k := inoKey{uint64(st.Dev), st.Ino}
	if old, ok := w.names[rel]; ok && old != k {
		w.forget(rel)
	}
	if _, ok := w.names[rel]; !ok {
		if len(w.names) >= inboxMaxEntries {
			return errInboxFlood
		}
		w.names[rel] = k
		w.refs[k]++
	}
	b := inboxBytes(st)
	w.total += b - w.size[k]
	w.size[k] = b
	return nil
}

// forget removes the name rel (and the inode once it has no name left).
func (w *inboxWatch) forget(rel string) {
	k, ok := w.names[rel]
	if !ok {
		return
	}
	delete(w.names, rel)
	if w.refs[k]--; w.refs[k] <= 0 {
		w.total -= w.size[k]
		delete(w.refs, k)
		delete(w.size, k)
	}
}

// full recounts the whole inbox from scratch (watches kept: adding one
// again returns the same watch, now bound to the directory's current path).
func (w *inboxWatch) full() error {
	w.wds, w.names = map[int32]string{}, map[string]inoKey{}
	w.refs, w.size, w.total = map[inoKey]int{}, map[inoKey]int64{}, 0
	if w.root < 0 {
		fd, err := unix.Open(w.inbox, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("cannot inspect the inbox %s: %w", w.inbox, err)
		}
		w.root = fd
	}
	// A new open file description each walk: a dup would share the
	// directory offset, and the next listing would start at its end.
	fd, err := unix.Openat(w.root, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("cannot inspect the inbox %s: %w", w.inbox, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return fmt.Errorf("cannot inspect the inbox %s: %w", w.inbox, err)
	}
	if err := w.set(".", &st); err != nil {
		unix.Close(fd)
		return err
	}
	return w.dir(fd, ".")
}

// watch adds an inotify watch on the directory open at fd. It goes through
// /proc/self/fd, which names exactly the directory opened (no link of the
// agent's is followed). A kernel out of watches leaves the directory to
// the backstop walk; any other error fails closed.
func (w *inboxWatch) watch(fd int, rel string) error {
	if w.ifd < 0 {
		return nil
	}
	wd, err := unix.InotifyAddWatch(w.ifd, fmt.Sprintf("/proc/self/fd/%d", fd), inboxEvents)
	switch {
	case err == nil:
		w.wds[int32(wd)] = rel
		return nil
	case errors.Is(err, unix.ENOSPC), errors.Is(err, unix.ENOMEM):
		return nil
	default:
		return fmt.Errorf("cannot watch inbox entry %s: %w", rel, err)
	}
}

// dir watches and counts the directory open at fd (rel names it) and what
// it holds, and closes fd. The watch comes before the listing, so an entry
// made in between is seen by one or the other.
func (w *inboxWatch) dir(fd int, rel string) error {
	defer unix.Close(fd)
	if err := w.watch(fd, rel); err != nil {
		return err
	}
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
			if err := w.entry(fd, rel, name, true); err != nil || w.total > w.max {
				return err
			}
		}
	}
}

// entry stats name in the directory open at dfd (rel names the directory)
// and counts it; a directory is walked (and watched) when walk is set.
func (w *inboxWatch) entry(dfd int, rel, name string, walk bool) error {
	p := path.Join(rel, name)
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		if errors.Is(err, unix.ENOENT) {
			w.forget(p) // removed since the listing or the event
			return nil
		}
		return fmt.Errorf("cannot inspect inbox entry %s: %w", p, err)
	}
	if err := w.set(p, &st); err != nil || w.total > w.max {
		return err
	}
	if !walk || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return nil
	}
	cfd, err := openSubdir(dfd, name)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			w.forget(p)
			return nil
		}
		return fmt.Errorf("cannot inspect inbox entry %s: %w", p, err)
	}
	return w.dir(cfd, p)
}

// openDir opens the inbox directory rel, one component at a time, never
// following a link; ok is false when it is gone or is no longer a
// directory (the events that follow say what became of it).
func (w *inboxWatch) openDir(rel string) (fd int, ok bool, err error) {
	fd, err = unix.Openat(w.root, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil || rel == "." {
		return fd, err == nil, err
	}
	for _, c := range strings.Split(rel, "/") {
		nfd, err := openSubdir(fd, c)
		unix.Close(fd)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			return -1, false, nil
		}
		if err != nil {
			return -1, false, fmt.Errorf("cannot inspect inbox entry %s: %w", rel, err)
		}
		fd = nfd
	}
	return fd, true, nil
}

// events applies a batch of inotify events: each entry named is stat'ed
// again (once per batch), a new directory is walked and watched; what
// cannot be applied entry by entry (a lost queue, a directory moved, a
// watch not known) becomes one full walk.
func (w *inboxWatch) events(b []byte) error {
	type ev struct {
		dir, name string
		mask      uint32
	}
	var todo []ev
	seen := map[[2]string]int{}
	full := false
	for len(b) >= unix.SizeofInotifyEvent {
		e := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
		end := unix.SizeofInotifyEvent + int(e.Len)
		if end > len(b) {
			break
		}
		name := strings.TrimRight(string(b[unix.SizeofInotifyEvent:end]), "\x00")
		b = b[end:]
		switch {
		case e.Mask&unix.IN_Q_OVERFLOW != 0:
			full = true
			continue
		case e.Mask&unix.IN_IGNORED != 0:
			delete(w.wds, e.Wd)
			continue
		case e.Mask&unix.IN_ISDIR != 0 && e.Mask&(unix.IN_MOVED_FROM|unix.IN_MOVED_TO) != 0:
			full = true // a subtree changed its path
			continue
		case name == "":
			continue // about the directory itself: its entry in its parent's watch says the same
		}
		dir, ok := w.wds[e.Wd]
		if !ok {
			full = true
			continue
		}
		k := [2]string{dir, name}
		if i, ok := seen[k]; ok {
			todo[i].mask |= e.Mask
			continue
		}
		seen[k] = len(todo)
		todo = append(todo, ev{dir, name, e.Mask})
	}
	if full {
		return w.full()
	}
	for _, e := range todo {
		fd, ok, err := w.openDir(e.dir)
		if err != nil {
			return err
		}
		if !ok {
			w.forget(path.Join(e.dir, e.name))
			continue
		}
		// A directory created (or only now seen) is walked and watched.
		_, known := w.names[path.Join(e.dir, e.name)]
		err = w.entry(fd, e.dir, e.name, e.mask&unix.IN_ISDIR != 0 && (e.mask&unix.IN_CREATE != 0 || !known))
		unix.Close(fd)
		if err != nil || w.total > w.max {
			return err
		}
	}
	return nil
}

// openSubdir opens the directory name in dfd for reading, never following
// a link (a symbolic link at name fails with ELOOP, a file with ENOTDIR).
func openSubdir(dfd int, name string) (int, error) {
	return unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}
