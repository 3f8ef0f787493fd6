package receipts

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Read receipts for an unprivileged caller (docs/threat-model.md, "Read
// receipts"). A fanotify mount mark on the sandbox's bind of a host
// filesystem needs CAP_SYS_ADMIN of the initial user namespace; a group
// made without it (FANOTIFY_UNPRIV on Linux 5.13+) may only add inode
// marks, and reports every other process's pid as 0 (and FAN_REPORT_PIDFD
// is EPERM). So this recorder marks every folder the sandbox's vault
// mounts show (FAN_OPEN|FAN_OPEN_EXEC|FAN_EVENT_ON_CHILD: the opens of each
// folder's files) — the same inodes as the host's — and records every open
// of them during the session, by whichever process: the agent's reads are
// all there, and so is any other opener's (Attribution AnyProcess). Only
// the recorder's own opens carry its pid and are dropped.

// inodeMask is what each folder is marked for: its files' opens, and the
// folders made in it or moved into it while the session runs (they are
// marked when seen).
const inodeMask = unix.FAN_OPEN | unix.FAN_OPEN_EXEC | unix.FAN_EVENT_ON_CHILD | unix.FAN_CREATE | unix.FAN_MOVED_TO | unix.FAN_ONDIR

// inodeWalk marks the folders of the sandbox's vault mounts.
type inodeWalk struct {
	fan   int
	vault string
	// roots are a directory descriptor of each vault mount point (through
	// the sandbox's mount, so that what is walked is what it shows) and
	// the point's path relative to the vault.
	roots []int
	rels  []string
	// dirs maps a folder's handle key (fsid, size, type, handle bytes, as
	// an event's DFID_NAME record has it) to its vault-relative path;
	// under to the root it was reached from.
	dirs  map[string]string
	under map[string]int
	marks int
	err   error
	// host is the host's vault folder (O_PATH), -1 if it cannot be
	// opened: under vault.view: in-force a vault mount is an overlay,
	// whose folders report no subfolder count and see no change the
	// gate makes to the vault below it (overlay_linux.go).
	host int
	// groups are the fanotify groups of filesystems other than the first
	// one marked (fan), by device: one group cannot mark two overlays
	// (vault.view with vault.visible), nor an overlay and another
	// filesystem (the host's vault folders): EXDEV (overlay_linux.go).
	groups map[uint64]int
	// fanDev is the device fan marks, 0 before the first mark.
	fanDev uint64
}

// markInodes makes an unprivileged-capable fanotify group and marks every
// folder under the handed-over mount points; it returns the walk (its fan
// set), or nil and why not.
func (r *Recorder) markInodes(points []string, fds []int) (*inodeWalk, string) {
	fan, err := unix.FanotifyInit(unix.FAN_CLASS_NOTIF|unix.FAN_CLOEXEC|unix.FAN_NONBLOCK|unix.FAN_REPORT_DFID_NAME, unix.O_RDONLY|unix.O_LARGEFILE|unix.O_CLOEXEC)
	if err != nil {
		return nil, "fanotify_init (inode marks): " + err.Error()
	}
	w := &inodeWalk{fan: fan, vault: r.vault, dirs: map[string]string{}, under: map[string]int{}, host: -1, groups: map[uint64]int{}}
	// The host's vault, for the in-force view's overlay (viewMarks).
	host := r.host
	if host == "" {
		host = r.vault
	}
	if fd, err := unix.Open(host, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
		w.host = fd
	}
	for i, fd := range fds {
		rel, err := filepath.Rel(r.vault, points[i])
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			w.close()
			return nil, fmt.Sprintf("vault mount %s is not under the vault %s", points[i], r.vault)
		}
		// The O_PATH descriptor reopened as a folder: fanotify_mark and
		// openat2 take no O_PATH descriptor to read.
		root, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			w.close()
			return nil, fmt.Sprintf("open vault mount %s: %v", points[i], err)
		}
		w.roots, w.rels = append(w.roots, root), append(w.rels, rel)
		if _, ok := w.markTree(len(w.roots)-1, "", nil); !ok {
			why := w.err.Error()
			w.close()
			return nil, why
		}
	}
	return w, ""
}

// close ends the walk's group and folders.
func (w *inodeWalk) close() {
	for _, fd := range w.roots {
		unix.Close(fd)
	}
	w.roots = nil
	if w.host >= 0 {
		unix.Close(w.host)
		w.host = -1
	}
	for _, g := range w.groups {
		go unix.Close(g)
	}
	w.groups = nil
	if w.fan >= 0 {
		go unix.Close(w.fan) // a group's close waits for its marks' grace period
		w.fan = -1
	}
}

// markTree marks the folder sub (relative to root i's mount point) and
// every folder under it, the mark before its listing: a file made after
// the listing is opened after the mark. found, when set, is called for
// every file the listing shows (a folder that appeared during the
// session: its files may have been opened before it was marked). It
// stops at other mounts (openat2 RESOLVE_NO_XDEV: another vault mount is
// walked from its own root; the inbox and masks are not vault reads).
func (w *inodeWalk) markTree(i int, sub string, found func(dir string, key []byte, name string)) (string, bool) {
	p := sub
	if p == "" {
		p = "."
	}
	fd, err := unix.Openat2(w.roots[i], p, &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC | unix.O_NOFOLLOW,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_XDEV | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS})
	if err != nil {
		// A folder removed since it was listed, or a mount point: not
		// this walk's to mark.
		return "", true
	}
	defer unix.Close(fd)
	rel := filepath.Join(w.rels[i], sub)
	group, err := w.groupFor(fd)
	if err != nil {
		w.err = fmt.Errorf("fanotify_init for %s: %v", rel, err)
		return "", false
	}
	if err := unix.FanotifyMark(group, unix.FAN_MARK_ADD, inodeMask, fd, ""); err != nil {
		w.err = fmt.Errorf("fanotify inode mark on %s (mark %d): %v", rel, w.marks+1, err)
		if err == unix.ENOSPC {
			w.err = fmt.Errorf("%w: the vault has more folders than fs.fanotify.max_user_marks lets this user mark", w.err)
		}
		return "", false
	}
	w.marks++
	key, fsType, ok := handleKey(fd)
	if !ok {
		w.err = fmt.Errorf("no file handle for %s: its events could not be named", rel)
		return "", false
	}
	w.dirs[key], w.under[key] = rel, i
	leaf := false
	if fsType == unix.OVERLAYFS_SUPER_MAGIC {
		var ok bool
		if leaf, ok = w.viewMarks(i, rel); !ok {
			return "", false
		}
	} else {
		leaf = noSubdirs(fd, fsType)
	}
	if found == nil && leaf {
		return key, true // a leaf folder: nothing to walk (a 100k-note vault's listing is 100k entries)
	}
	// getdents with its d_type: a 100k-note vault's listing is 100k
	// entries, of which only the folders are walked (no stat, no
	// DirEntry per note).
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if n <= 0 || err != nil {
			break
		}
		for b := buf[:n]; len(b) >= 19; {
			reclen := int(binary.NativeEndian.Uint16(b[16:]))
			if reclen < 19 || reclen > len(b) {
				break
			}
			typ, name := b[18], b[19:reclen]
			if j := bytes.IndexByte(name, 0); j >= 0 {
				name = name[:j]
			}
			b = b[reclen:]
			switch nm := string(name); {
			case nm == "." || nm == "..":
			case typ == unix.DT_DIR:
				if _, ok := w.markTree(i, filepath.Join(sub, nm), found); !ok {
					return "", false
				}
			case typ == unix.DT_UNKNOWN:
				// A filesystem without d_type: ask.
				var st unix.Stat_t
				if unix.Fstatat(fd, nm, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
					if _, ok := w.markTree(i, filepath.Join(sub, nm), found); !ok {
						return "", false
					}
				} else if found != nil && st.Mode&unix.S_IFMT != unix.S_IFLNK {
					found(rel, []byte(key), nm)
				}
			case found != nil && typ != unix.DT_LNK:
				found(rel, []byte(key), nm)
			}
		}
	}
	return key, true
}

// handleKey is fd's folder as an event's DFID_NAME record names it: the
// filesystem id (statfs f_fsid) and the file handle fanotify encodes
// (AT_HANDLE_FID, Linux 6.5+; a plain handle where it is refused).
func handleKey(fd int) (string, int64, bool) {
	var st unix.Statfs_t
	if unix.Fstatfs(fd, &st) != nil {
		return "", 0, false
	}
	h, _, err := unix.NameToHandleAt(fd, "", unix.AT_EMPTY_PATH|atHandleFID)
	if err == unix.EINVAL {
		h, _, err = unix.NameToHandleAt(fd, "", unix.AT_EMPTY_PATH)
	}
	if err != nil {
		return "", 0, false
	}
	b := make([]byte, 16, 16+h.Size())
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], uint32(st.Fsid.Val[0]))
	ne.PutUint32(b[4:], uint32(st.Fsid.Val[1]))
	if st.Fsid.Val[0] == 0 && st.Fsid.Val[1] == 0 {
		// An overlay (vault.view) reports no filesystem id: every
		// overlay's handles would share one namespace, and two folders
		// of two overlays the same key. Its device stands in, as the
		// reader puts it in that overlay's events (devFsid).
		var fst unix.Stat_t
		if unix.Fstat(fd, &fst) != nil {
			return "", 0, false
		}
		copy(b[0:8], devFsid(uint64(fst.Dev)))
	}
	ne.PutUint32(b[8:], uint32(h.Size()))
	ne.PutUint32(b[12:], uint32(h.Type()))
	return string(append(b, h.Bytes()...)), int64(st.Type), true
}

// noSubdirs says whether the folder fd has no subfolder, from its link
// count (2: its name and its "."; each subfolder's ".." adds one) on the
// filesystems known to keep it so (ext4's dir_nlink sets 1 past 65000,
// btrfs always 1: those are listed). Read after the folder is marked: a
// subfolder made since is a FAN_CREATE event.
func noSubdirs(fd int, fsType int64) bool {
	switch fsType {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.TMPFS_MAGIC:
	default:
		return false
	}
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Nlink == 2
}

// atHandleFID asks name_to_handle_at for the handle fanotify reports
// (include/uapi/linux/fcntl.h).
const atHandleFID = 0x200

// newDir marks a folder made in (or moved into) a marked folder while the
// session runs, and records every file it already holds as opened: it
// may have been opened before the mark (never under-report).
func (w *inodeWalk) newDir(rs *readSet, parentKey []byte, name string) {
	i, ok := w.under[string(parentKey)]
	if !ok || name == "" || strings.Contains(name, "/") {
		rs.vr.Unattributed++
		return
	}
	parent := w.dirs[string(parentKey)]
	sub, err := filepath.Rel(w.rels[i], filepath.Join(parent, name))
	if err != nil {
		rs.vr.Unattributed++
		return
	}
	if _, ok := w.markTree(i, sub, func(dir string, key []byte, n string) { rs.add(key, n, dir) }); !ok {
		// Out of marks: what this folder holds from now on is not seen.
		rs.vr.Lost = true
	}
}
