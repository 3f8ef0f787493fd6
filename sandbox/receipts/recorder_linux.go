package receipts

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Read receipts: which vault files the agent opened, seen from outside
// the sandbox. The init hands fedmem-run a descriptor of each vault mount
// of the sandbox (handOverVault); fedmem-run puts a fanotify mount mark
// for FAN_OPEN on each — only opens through the sandbox's own mounts are
// reported, never the host's or another session's — and reads the events
// here until the sandbox is gone. The group reports the parent folder's
// file handle and the name (FAN_REPORT_DFID_NAME): no descriptor of the
// agent's file is ever opened here, and a folder's handle is resolved to
// its path once (open_by_handle_at on the host's vault, then its
// /proc/self/fd link).
//
// What it cannot see is in docs/threat-model.md ("Read receipts"): a
// note read through Git's object store is an open of .git files
// (GitOpens); the kernel reports an open, not which bytes were read.

// Recorder is fedmem-run's end of the receipts socket and, once the
// vault's mounts are marked, the fanotify group's reader.
type Recorder struct {
	sock  *os.File
	vault string
	// host is the folder the vault's in-force view shows (the gate's view
	// tree, or the vault itself): its folders' link counts and new
	// subfolders stand for the overlay's (overlay_linux.go).
	host string
	mode Mode
	stop [2]int // a pipe: closing stop[1] ends the reader
	done chan *VaultReads
}

// Start serves the receipts socket: it waits for the init's
// descriptors, marks them and answers, then reads events until finish.
// viewTree is the gate's view tree the in-force view shows ("" none: the
// vault itself).
func Start(sock *os.File, vault, viewTree string, mode Mode) *Recorder {
	host := vault
	if viewTree != "" {
		host = viewTree
	}
	r := &Recorder{sock: sock, vault: vault, host: host, mode: mode, done: make(chan *VaultReads, 1), stop: [2]int{-1, -1}}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err == nil {
		r.stop = p
	}
	go func() { r.done <- r.serve() }()
	return r
}

// Finish ends the reader once the sandbox is gone and returns what it
// recorded: every event of an open made before then is already queued
// (fsnotify reports an open from within open(2) itself), so the queue is
// drained to its end first.
func (r *Recorder) Finish() *VaultReads {
	if r == nil {
		return nil
	}
	if r.stop[1] >= 0 {
		unix.Close(r.stop[1])
	}
	vr := <-r.done // the init is gone: a recvmsg still waiting for it ends
	r.sock.Close()
	if r.stop[0] >= 0 {
		unix.Close(r.stop[0])
	}
	return vr
}

// serve receives the init's mounts, marks them, answers and reads.
func (r *Recorder) serve() *VaultReads {
	buf := make([]byte, 64<<10)
	oob := make([]byte, unix.CmsgSpace(4*MaxMounts))
	// The fanotify group is made while the init builds its root, not
	// after it handed its mounts over: the init waits for the answer,
	// and fanotify_init was most of the round trip. It has no mark until
	// mark, so it sees nothing before.
	g := group{fan: -1}
	if r.stop[0] >= 0 {
		g = newGroup()
	}
	n, oobn, _, _, err := unix.Recvmsg(int(r.sock.Fd()), buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil || n == 0 {
		// The init ended before its root was built: no agent ever ran
		// (handOverVault comes before the fork), nothing to record.
		g.close()
		return nil
	}
	var points []string
	_ = json.Unmarshal(buf[:n], &points)
	fds := parseRights(oob[:oobn])
	fan, why, unpriv := -1, "no pipe to end the recorder with", false
	if r.stop[0] >= 0 {
		fan, why, unpriv = r.mark(points, fds, g)
	}
	var walk *inodeWalk
	if fan < 0 && unpriv {
		// An unprivileged caller: inode marks on every vault folder
		// instead (inode_linux.go); every opener is seen, not only the
		// sandbox.
		var why2 string
		if walk, why2 = r.markInodes(points, fds); walk != nil {
			fan = walk.fan
		} else {
			why += "; " + why2
		}
	}
	// The mounts are not held from here: when the sandbox's mount
	// namespace goes, its mounts and their marks go with it, and the
	// kernel's grace period for the marks (synchronize_srcu, some 15 ms)
	// runs while the sandbox is reaped, not in the close below.
	for _, fd := range fds {
		unix.Close(fd)
	}
	if fan < 0 {
		if r.mode == Required {
			_, _ = r.sock.Write(append([]byte{Refused}, "read receipts are required (vault.receipts: required) and cannot be recorded: "+why...))
		} else {
			_, _ = r.sock.Write([]byte{Unmarked})
		}
		return &VaultReads{Unavailable: why}
	}
	// Closed in the background: destroying a fanotify group waits for
	// its marks' grace period, which the session need not wait for.
	if walk != nil {
		defer walk.close()
	} else {
		defer func() { go unix.Close(fan) }()
	}
	if _, err := r.sock.Write([]byte{Marked}); err != nil {
		return &VaultReads{Unavailable: "the sandbox's init ended before its vault was marked"}
	}
	return r.read(fan, walk)
}

// parseRights returns the descriptors of an SCM_RIGHTS message.
func parseRights(oob []byte) []int {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var fds []int
	for i := range msgs {
		if f, err := unix.ParseUnixRights(&msgs[i]); err == nil {
			fds = append(fds, f...)
		}
	}
	return fds
}

// group is a fanotify group for mount marks (newGroup), or why none.
type group struct {
	fan int
	err error
}

// newGroup makes the fanotify group mark marks the vault's mounts in.
func newGroup() group {
	flags := uint(unix.FAN_CLASS_NOTIF | unix.FAN_CLOEXEC | unix.FAN_NONBLOCK | unix.FAN_REPORT_DFID_NAME)
	// An unlimited queue (CAP_SYS_ADMIN): a grep over a large vault must
	// not overflow the default 16384 events while this reader catches up.
	fan, err := unix.FanotifyInit(flags|unix.FAN_UNLIMITED_QUEUE, unix.O_RDONLY|unix.O_LARGEFILE|unix.O_CLOEXEC)
	if err == unix.EPERM {
		fan, err = unix.FanotifyInit(flags, unix.O_RDONLY|unix.O_LARGEFILE|unix.O_CLOEXEC)
	}
	if err != nil {
		return group{fan: -1, err: err}
	}
	return group{fan: fan}
}

// close closes a group no mark was put in.
func (g group) close() {
	if g.fan >= 0 {
		unix.Close(g.fan)
	}
}

// mark marks every mount the init handed over in the group g (made
// before, newGroup); it returns the group, or -1 (g closed), why not and
// whether mount marks are refused for want of privilege (the caller may
// mark inodes instead).
func (r *Recorder) mark(points []string, fds []int, g group) (int, string, bool) {
	if len(fds) == 0 || len(fds) != len(points) {
		g.close()
		return -1, fmt.Sprintf("the init handed over %d descriptors for %d vault mounts", len(fds), len(points)), false
	}
	if g.err != nil {
		return -1, "fanotify_init: " + g.err.Error(), false
	}
	fan := g.fan
	for i, fd := range fds {
		// FAN_MARK_MOUNT: the sandbox's own bind of the vault, so only
		// this session's opens are seen. A bind of a host filesystem in
		// another user namespace's mount table can be marked only with
		// CAP_SYS_ADMIN of the initial user namespace (a root caller).
		// The O_PATH descriptor is named through its /proc/self/fd link
		// (fanotify_mark's dirfd alone takes no O_PATH descriptor).
		if err := unix.FanotifyMark(fan, unix.FAN_MARK_ADD|unix.FAN_MARK_MOUNT, unix.FAN_OPEN|unix.FAN_OPEN_EXEC, unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd)); err != nil {
			unix.Close(fan)
			why := fmt.Sprintf("fanotify mount mark on %s: %v", points[i], err)
			switch err {
			case unix.EPERM:
				why += " (marking the sandbox's vault mount needs CAP_SYS_ADMIN of the initial user namespace: a root caller)"
			case unix.ENODEV:
				// An overlay (vault.view: in-force) encodes no file
				// handle a mount mark can report: its folders are
				// marked one by one instead (inode marks take it).
				why += " (the vault's in-force view is an overlay, whose mounts take inode marks only)"
			}
			return -1, why, err == unix.EPERM || err == unix.ENODEV
		}
	}
	return fan, "", false
}

// read reads fan's events until finish, then drains the queue. The
// reader must keep up with the agent (a queue left to grow makes every
// open in the sandbox slower: the kernel compares each new event with
// those queued), so each event costs it map lookups only; paths are put
// together once, at the end.
func (r *Recorder) read(fan int, walk *inodeWalk) *VaultReads {
	rs := newReadSet(r.vault, map[string]string{})
	if walk != nil {
		// Folders are named from the walk (open_by_handle_at needs
		// CAP_DAC_READ_SEARCH); the recorder's own opens are not reads.
		rs.dirs, rs.walk, rs.self = walk.dirs, walk, int32(os.Getpid())
		rs.vr.Attribution = AnyProcess
	} else {
		rs.vr.Attribution = Sandbox
		rs.mountFd, _ = unix.Open(r.vault, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0) // open_by_handle_at takes no O_PATH mount descriptor
	}
	defer func() {
		if rs.mountFd >= 0 {
			unix.Close(rs.mountFd)
		}
	}()
	buf := make([]byte, 256<<10)
	stopping, wait := false, gather
	var extra []fanGroup
	if walk != nil {
		wait = 1                   // the unprivileged group's queue holds 16384 events: keep it shorter
		extra = walk.extraGroups() // vault.view's other filesystems (overlay_linux.go)
		rs.mainFsid = walk.mainFsid()
		rs.fsid = rs.mainFsid
	}
	for {
		n, err := unix.Read(fan, buf)
		if n > 0 {
			rs.events(buf[:n])
			if n < len(buf)/4 && !stopping && r.stop[0] >= 0 {
				// A short read: let events gather for a moment rather
				// than pay a wake-up (the Go scheduler's with it) and a
				// read for every few dozen opens: a grep of the vault is
				// 100k of them, some 80 a millisecond, and at 1 ms the
				// recorder woke some 1300 times. The queue stays short
				// (5 ms of opens, some 40 KiB of kernel memory) and the
				// end of the session cuts the wait short.
				_, _ = unix.Poll([]unix.PollFd{{Fd: int32(r.stop[0]), Events: unix.POLLIN}}, wait)
			}
			continue
		}
		if err != unix.EAGAIN && err != unix.EINTR {
			if err != nil {
				rs.vr.Lost = true // a read error: what is queued is not all seen
			}
			return rs.finish()
		}
		drained := false
		for _, g := range extra {
			drained = drainHost(g, buf, rs) || drained
		}
		if drained {
			continue // a new folder marked, or opens elsewhere: read again
		}
		if stopping {
			return rs.finish() // drained: every open before the end is in
		}
		pfd := []unix.PollFd{{Fd: int32(fan), Events: unix.POLLIN}, {Fd: int32(r.stop[0]), Events: unix.POLLIN}}
		for _, g := range extra {
			pfd = append(pfd, unix.PollFd{Fd: int32(g.fd), Events: unix.POLLIN})
		}
		if _, err := unix.Poll(pfd, -1); err != nil && err != unix.EINTR {
			return rs.finish()
		}
		if pfd[1].Revents != 0 || r.stop[0] < 0 {
			stopping = true
		}
	}
}

// gather is how long, in milliseconds, the reader of an unlimited queue
// (a root caller's) lets events gather after a short read.
const gather = 5

// readSet turns events into VaultReads. What it keeps per file opened
// holds no pointer (an index of its folder, its name's place in names,
// an index of its time): a grep of the vault is 100k of them, and the
// reader must keep up with the agent without the garbage collector
// scanning, or write barriers copying, what it has kept.
type readSet struct {
	vault   string
	mountFd int
	// fsid, when set, stands for the zero filesystem id of the events
	// being read (an overlay's: patchFsid); mainFsid is fan's.
	fsid, mainFsid []byte
	// dirs maps a folder's handle (fsid, size, type, handle bytes) to
	// its vault-relative path, "" if it could not be resolved.
	dirs map[string]string
	// dirAt maps a resolved folder's handle key to its index in
	// folders; lastKey and lastDir are the folder of the event before
	// (a grep opens a folder's files one after another).
	dirAt   map[string]int32
	folders []folder
	lastKey []byte
	lastDir int32
	// Names are kept in names (no allocation per file); a folder's seen
	// maps a hash of each name first opened in it to its index in order,
	// a rare second name of the same hash is in collided.
	seed     maphash.Seed
	collided map[string]struct{}
	names    []byte
	order    []opened
	// times holds when each read's events were read (one entry per read
	// that had a first open); now is the current one, nowAt its index or
	// -1 before it is first used.
	times []time.Time
	now   time.Time
	nowAt int32
	vr    *VaultReads
	// walk, with inode marks: new folders are marked as they appear;
	// self is the recorder's pid (its own opens are not the agent's).
	walk *inodeWalk
	self int32
}

// opened is one file first seen opened: its folder (an index in
// folders), its name (names[off:off+n]) and when (an index in times).
type opened struct {
	dir, at int32
	off, n  uint32
}

// folder is a folder of the vault some file was opened in: its path and
// the hashes of its files' names first opened (one small map each: the
// lookups of a grep, one folder after another, stay in the cache, where
// one map of 100k files would miss it on every open).
type folder struct {
	path string
	seen map[uint64]int32
}

// newReadSet is an empty readSet for the vault at vaultDir.
func newReadSet(vaultDir string, dirs map[string]string) *readSet {
	return &readSet{vault: vaultDir, mountFd: -1, dirs: dirs, dirAt: map[string]int32{}, lastDir: -1, nowAt: -1,
		seed: maphash.MakeSeed(), collided: map[string]struct{}{}, vr: &VaultReads{}}
}

// dirIndex is the index in folders of the folder with handle key, or
// -1 when it cannot be named (counted as unattributed each time it is
// opened, and asked again: an inode walk may name it later).
func (rs *readSet) dirIndex(key []byte) int32 {
	if rs.lastDir >= 0 && bytes.Equal(key, rs.lastKey) {
		return rs.lastDir
	}
	i, ok := rs.dirAt[string(key)]
	if !ok {
		dir, known := rs.dirs[string(key)]
		if !known {
			dir = rs.resolve(int32(binary.NativeEndian.Uint32(key[12:])), key[16:])
			rs.dirs[string(key)] = dir
		}
		if dir == "" {
			return -1
		}
		i = int32(len(rs.folders))
		rs.folders = append(rs.folders, folder{path: dir, seen: map[uint64]int32{}})
		rs.dirAt[string(key)] = i
	}
	rs.lastKey, rs.lastDir = append(rs.lastKey[:0], key...), i
	return i
}

// firstOpen says whether name in folder dir is opened for the first
// time, and notes it.
func (rs *readSet) firstOpen(dir int32, name []byte) bool {
	h := maphash.Bytes(rs.seed, name)
	seen := rs.folders[dir].seen
	i, ok := seen[h]
	if !ok {
		seen[h] = int32(len(rs.order))
		return true
	}
	if o := rs.order[i]; bytes.Equal(rs.names[o.off:o.off+o.n], name) {
		return false
	}
	k := string(binary.NativeEndian.AppendUint32(nil, uint32(dir))) + string(name)
	if _, ok := rs.collided[k]; ok {
		return false
	}
	rs.collided[k] = struct{}{}
	return true
}

// fanotify's event layout (linux/fanotify.h): the metadata, then info
// records {type u8, pad u8, len u16} each; a DFID_NAME record holds the
// fsid (8 bytes), a struct file_handle {bytes u32, type i32, handle} and
// the name, NUL-terminated.
const fanMetaLen = 24

// events handles one read's worth of events.
func (rs *readSet) events(b []byte) {
	ne := binary.NativeEndian
	rs.now, rs.nowAt = time.Now(), -1
	for len(b) >= fanMetaLen {
		evLen, metaLen := int(ne.Uint32(b[0:])), int(ne.Uint16(b[6:]))
		mask, fd, pid := ne.Uint64(b[8:]), int32(ne.Uint32(b[16:])), int32(ne.Uint32(b[20:]))
		if evLen < fanMetaLen || evLen > len(b) || metaLen < fanMetaLen || metaLen > evLen {
			rs.vr.Lost = true
			return
		}
		ev := b[metaLen:evLen]
		b = b[evLen:]
		patchFsid(ev, rs.fsid) // an overlay's events: its device stands for its id
		if fd >= 0 {
			unix.Close(int(fd))
		}
		if mask&unix.FAN_Q_OVERFLOW != 0 {
			rs.vr.Lost = true
			continue
		}
		if mask&(unix.FAN_CREATE|unix.FAN_MOVED_TO) != 0 {
			if mask&unix.FAN_ONDIR != 0 && rs.walk != nil {
				rs.newFolder(ev)
			}
			continue // a file made in the vault is not a read
		}
		if mask&unix.FAN_ONDIR != 0 {
			continue // a folder opened (inode marks report them): not a note read
		}
		if rs.self != 0 && pid == rs.self {
			continue // the recorder's own open (an unprivileged group reports no other pid)
		}
		if !rs.record(ev) {
			rs.vr.Unattributed++
		}
	}
}

// record notes an event's DFID_NAME record; false when it has none that
// can be read.
func (rs *readSet) record(ev []byte) bool {
	key, nameAt, ok := dfidName(ev)
	if !ok || nameAt == len(key) {
		return false // no record, or no name
	}
	dir := rs.dirIndex(key[:nameAt])
	if dir < 0 {
		return false // counted as unattributed each time
	}
	rs.note(dir, key[nameAt:])
	return true
}

// dfidName finds an event's DFID_NAME record: key is the folder's handle
// key (fsid, handle size and type, handle bytes) followed by the name
// (without its NUL), which starts at nameAt; ok is false when the event
// has no such record or it is cut short.
func dfidName(ev []byte) (key []byte, nameAt int, ok bool) {
	ne := binary.NativeEndian
	for len(ev) >= 4 {
		typ, l := ev[0], int(ne.Uint16(ev[2:]))
		if l < 4 || l > len(ev) {
			return nil, 0, false
		}
		rec := ev[4:l]
		ev = ev[l:]
		if typ != unix.FAN_EVENT_INFO_TYPE_DFID_NAME || len(rec) < 16 {
			continue
		}
		nameAt = 16 + int(ne.Uint32(rec[8:]))
		if nameAt > len(rec) {
			return nil, 0, false
		}
		end := nameAt
		for end < len(rec) && rec[end] != 0 {
			end++
		}
		return rec[:end], nameAt, true
	}
	return nil, 0, false
}

// note records name in folder dir (an index in folders), unless it
// was opened before.
func (rs *readSet) note(dir int32, name []byte) {
	if !rs.firstOpen(dir, name) {
		return // opened before
	}
	if rs.nowAt < 0 {
		rs.nowAt = int32(len(rs.times))
		rs.times = append(rs.times, rs.now)
	}
	rs.order = append(rs.order, opened{dir: dir, at: rs.nowAt, off: uint32(len(rs.names)), n: uint32(len(name))})
	rs.names = append(rs.names, name...)
}

// add records the file name in the folder with handle key dirKey (path
// dir) as opened.
func (rs *readSet) add(dirKey []byte, name, dir string) {
	if _, ok := rs.dirs[string(dirKey)]; !ok {
		rs.dirs[string(dirKey)] = dir
	}
	if i := rs.dirIndex(dirKey); i >= 0 {
		rs.note(i, []byte(name))
	}
}

// newFolder handles a folder made in or moved into a marked folder (a
// DFID_NAME record: the parent's handle and the new name).
func (rs *readSet) newFolder(ev []byte) {
	key, nameAt, ok := dfidName(ev)
	if !ok {
		rs.vr.Unattributed++
		return
	}
	rs.walk.newDir(rs, key[:nameAt], string(key[nameAt:]))
}

// resolve is a folder's path relative to the vault, from its handle; ""
// when it cannot be resolved or is not in the vault.
func (rs *readSet) resolve(typ int32, h []byte) string {
	if rs.mountFd < 0 {
		return ""
	}
	fd, err := unix.OpenByHandleAt(rs.mountFd, unix.NewFileHandle(typ, h), unix.O_PATH|unix.O_CLOEXEC)
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil || strings.HasSuffix(p, " (deleted)") {
		return ""
	}
	rel, err := filepath.Rel(rs.vault, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return ""
	}
	return rel
}

// finish puts the paths together: files under .git are counted, every
// other file is a read. The paths are cut from one string, built in
// place (one allocation, not one per file nor a copy: fresh memory is a
// page fault per 4 KiB, and a grep's 100k paths are 3 MiB of it).
func (rs *readSet) finish() *VaultReads {
	size := 0
	for _, o := range rs.order {
		size += len(rs.folders[o.dir].path) + 1 + int(o.n)
	}
	var b strings.Builder
	b.Grow(size)
	for _, o := range rs.order {
		if d := rs.folders[o.dir].path; d != "." {
			b.WriteString(d)
			b.WriteByte('/')
		}
		b.Write(rs.names[o.off : o.off+o.n])
	}
	all := b.String()
	rs.vr.Reads = make([]VaultRead, 0, len(rs.order))
	start := 0
	for _, o := range rs.order {
		end := start + int(o.n)
		if d := rs.folders[o.dir].path; d != "." {
			end += len(d) + 1
		}
		rel := all[start:end]
		start = end
		if rel == ".git" || strings.HasPrefix(rel, ".git/") {
			rs.vr.GitOpens++
			continue
		}
		rs.vr.Reads = append(rs.vr.Reads, VaultRead{Path: rel, First: rs.times[o.at].UTC()})
	}
	return rs.vr
}
