//go:build linux

package seccomp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// WritePath is one path argument of a notified write call, as read from
// the caller's memory: Dirfd is the directory fd argument (AT_FDCWD for
// the legacy calls).
type WritePath struct {
	Dirfd int
	Path  string
}

// WriteRequest is one notified write call. The paths were read from the
// caller's memory before the kernel resolved them: the caller can change
// them, so they are good for a report, never for a decision.
type WriteRequest struct {
	Pid   int // the calling thread, in the listener's pid namespace
	Call  *WriteCall
	Args  [6]uint64
	Flags uint64 // open flags (openat2: open_how.flags)
	Paths []WritePath
}

// maxPath bounds a path read from the caller (PATH_MAX).
const maxPath = 4096

// memFiles caches the /proc/<tid>/mem files the listener has opened, by
// thread id: opening one per call is two system calls of the few each
// write call costs. A file opened for an earlier task of the same id reads
// nothing (its memory is gone: exec or exit) and is reopened; the rare id
// reused while the old task's memory lives on only makes a report wrong,
// which the agent can do anyway.
type memFiles map[uint32]int

const maxMemFiles = 64

func (m memFiles) get(tid uint32) (int, error) {
	if fd, ok := m[tid]; ok {
		return fd, nil
	}
	if len(m) >= maxMemFiles {
		m.drop()
	}
	fd, err := unix.Open("/proc/"+strconv.Itoa(int(tid))+"/mem", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	m[tid] = fd
	return fd, nil
}

func (m memFiles) forget(tid uint32) {
	if fd, ok := m[tid]; ok {
		unix.Close(fd)
		delete(m, tid)
	}
}

func (m memFiles) drop() {
	for tid := range m {
		m.forget(tid)
	}
}

// readRequest reads the notified call's paths from /proc/<tid>/mem, then
// checks the notification still pending (SECCOMP_IOCTL_NOTIF_ID_VALID):
// the task that made the call was then alive all along and the id named
// it. nil when the call is not a write (a read-only openat2) or nothing
// could be read (the caller may make its memory unreadable: its report is
// then lost, nothing else).
func readRequest(fd int, n *notif, c *WriteCall, mems memFiles) *WriteRequest {
	for try := 0; try < 2; try++ {
		mem, err := mems.get(n.Pid)
		if err != nil {
			return nil
		}
		req, err := readArgs(mem, n, c)
		if err == errNotWrite {
			return nil
		}
		if err != nil {
			mems.forget(n.Pid) // maybe a file of an earlier task: once more
			continue
		}
		id := n.ID
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SECCOMP_IOCTL_NOTIF_ID_VALID, uintptr(unsafe.Pointer(&id))); errno != 0 {
			mems.forget(n.Pid)
			return nil
		}
		return req
	}
	return nil
}

// errNotWrite: an openat2 without a write flag.
var errNotWrite = errors.New("seccomp: not a write")

func readArgs(mem int, n *notif, c *WriteCall) (*WriteRequest, error) {
	req := &WriteRequest{Pid: int(n.Pid), Call: c, Args: n.Args}
	switch {
	case c.How:
		var how [8]byte
		if k, err := unix.Pread(mem, how[:], int64(n.Args[2])); err != nil || k != len(how) {
			return nil, errNoString
		}
		req.Flags = binary.LittleEndian.Uint64(how[:])
		if !IsWriteOpen(req.Flags) {
			return nil, errNotWrite
		}
	case c.Flags >= 0:
		req.Flags = n.Args[c.Flags]
	}
	for _, a := range c.Paths {
		p, err := readString(mem, n.Args[a.Path])
		if err != nil {
			return nil, err
		}
		dirfd := unix.AT_FDCWD
		if a.Dirfd >= 0 {
			dirfd = int(int32(n.Args[a.Dirfd]))
		}
		req.Paths = append(req.Paths, WritePath{Dirfd: dirfd, Path: p})
	}
	return req, nil
}

// errNoString: no NUL within PATH_MAX bytes.
var errNoString = errors.New("seccomp: no NUL-terminated path")

// readString reads a NUL-terminated string at addr, one page at most per
// read so that an unmapped page after the string does not fail the read.
func readString(mem int, addr uint64) (string, error) {
	const page = 4096
	var out []byte
	var buf [page]byte
	for len(out) < maxPath {
		n := page - int(addr%page)
		k, err := unix.Pread(mem, buf[:n], int64(addr))
		if err != nil {
			return "", err
		}
		if k == 0 {
			return "", errNoString
		}
		if i := bytes.IndexByte(buf[:k], 0); i >= 0 {
			return string(append(out, buf[:i]...)), nil
		}
		out = append(out, buf[:k]...)
		addr += uint64(k)
	}
	return "", errNoString
}
