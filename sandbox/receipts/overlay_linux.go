package receipts

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/sys/unix"
)

// Read receipts under vault.view: in-force. The vault mount is a read-only
// overlay (sandbox/pid1/view_linux.go) that takes no fanotify mount mark
// (ENODEV: it encodes no file handle a mount mark reports), so its folders
// are inode-marked like an unprivileged caller's. An overlay's own folders
// see only the opens made through the overlay — the sandbox's — but two
// things of the vault below it they do not show: a folder's subfolder
// count (an overlay folder's link count is 1: every folder would be
// listed, 100k entries on a 100k-note vault) and a folder the gate makes
// while the session runs (no event on the overlay). Both are read from the
// host's folder of the same path: its link count, and a mark on it for
// the folders made in it (FAN_CREATE|FAN_MOVED_TO|FAN_ONDIR only: no open
// on the host is a read), which then marks the overlay's new folder and
// records what it already holds as opened (newDir: never under-report).

// hostDirMask: the host folder's new subfolders, not its opens.
const hostDirMask = unix.FAN_CREATE | unix.FAN_MOVED_TO | unix.FAN_ONDIR

// viewMarks marks the host folder of the overlay folder rel for new
// subfolders and reports whether it has none (the overlay's listing can
// then be skipped). ok is false when the mark failed (w.err says why).
func (w *inodeWalk) viewMarks(i int, rel string) (leaf, ok bool) {
	if w.host < 0 {
		return false, true // list the overlay's folder (slower, complete)
	}
	p := rel
	if p == "" {
		p = "."
	}
	fd, err := unix.Openat2(w.host, p, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		return false, true // not a folder of the host's vault: list the overlay's
	}
	defer unix.Close(fd)
	group, err := w.groupFor(fd)
	if err != nil {
		w.err = fmt.Errorf("fanotify_init (the host's vault folders): %v", err)
		return false, false
	}
	if err := unix.FanotifyMark(group, unix.FAN_MARK_ADD, hostDirMask, fd, ""); err != nil {
		w.err = fmt.Errorf("fanotify inode mark on the host's %s (mark %d): %v", rel, w.marks+1, err)
		return false, false
	}
	w.marks++
	key, fsType, ok := handleKey(fd)
	if !ok {
		w.err = fmt.Errorf("no file handle for the host's %s: its new folders could not be named", rel)
		return false, false
	}
	if _, seen := w.dirs[key]; !seen {
		w.dirs[key] = rel
		// A new folder in it is walked from the overlay root i, which
		// shows this folder.
		w.under[key] = i
	}
	return noSubdirs(fd, fsType), true
}

// groupFor is the fanotify group that marks fd's filesystem: fan for the
// first one marked, a group of its own for each other (made here).
func (w *inodeWalk) groupFor(fd int) (int, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return -1, err
	}
	dev := uint64(st.Dev) + 1 // never 0
	if w.fanDev == 0 || w.fanDev == dev {
		w.fanDev = dev
		return w.fan, nil
	}
	if g, ok := w.groups[dev]; ok {
		return g, nil
	}
	g, err := unix.FanotifyInit(unix.FAN_CLASS_NOTIF|unix.FAN_CLOEXEC|unix.FAN_NONBLOCK|unix.FAN_REPORT_DFID_NAME, unix.O_RDONLY|unix.O_LARGEFILE|unix.O_CLOEXEC)
	if err != nil {
		return -1, err
	}
	w.groups[dev] = g
	return g, nil
}

// fanGroup is one fanotify group of the walk and the filesystem id that
// stands in its events for an overlay's zero one (devFsid).
type fanGroup struct {
	fd   int
	fsid []byte
}

// extraGroups are the walk's groups besides fan, for the reader to poll.
func (w *inodeWalk) extraGroups() []fanGroup {
	var out []fanGroup
	for dev, g := range w.groups {
		out = append(out, fanGroup{g, devFsid(dev - 1)})
	}
	return out
}

// mainFsid is devFsid of the filesystem fan marks (nil before any mark).
func (w *inodeWalk) mainFsid() []byte {
	if w.fanDev == 0 {
		return nil
	}
	return devFsid(w.fanDev - 1)
}

// devFsid is the filesystem id a device stands for where the kernel
// reports none (an overlay): never all zero.
func devFsid(dev uint64) []byte {
	b := make([]byte, 8)
	binary.NativeEndian.PutUint64(b, dev|1<<63)
	return b
}

// patchFsid puts fsid in place of the zero filesystem id of an event's
// DFID_NAME record (an overlay's), in the reader's own buffer.
func patchFsid(ev, fsid []byte) {
	if fsid == nil {
		return
	}
	ne := binary.NativeEndian
	for len(ev) >= 4 {
		typ, l := ev[0], int(ne.Uint16(ev[2:]))
		if l < 4 || l > len(ev) {
			return
		}
		if typ == unix.FAN_EVENT_INFO_TYPE_DFID_NAME && l >= 12 && ne.Uint64(ev[4:12]) == 0 {
			copy(ev[4:12], fsid)
		}
		ev = ev[l:]
	}
}

// drainHost reads an extra group's events (a new folder on the host, an
// open in another overlay) until none is queued; it reports whether there
// were any.
func drainHost(g fanGroup, buf []byte, rs *readSet) bool {
	any := false
	rs.fsid = g.fsid
	defer func() { rs.fsid = rs.mainFsid }()
	for {
		n, err := unix.Read(g.fd, buf)
		if n <= 0 {
			if err != nil && err != unix.EAGAIN && err != unix.EINTR {
				rs.vr.Lost = true
			}
			return any
		}
		any = true
		rs.events(buf[:n])
	}
}
