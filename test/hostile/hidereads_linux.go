package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// hideReads reads one note of the vault per way an agent might hope the
// read receipt misses: each note is 10-projects/hide-<way>.md and holds
// the marker "hide-<way>", which the attempt's Saw reports (the read
// happened). The read receipt of the session must name every one.
//
// A hard link from the workdir is the one way that must fail: link(2)
// across two mounts is EXDEV (the vault's bind and the workdir are
// separate mounts, even on one filesystem), so no name outside the vault
// mount can lead to a note.
func (h *H) hideReads() {
	note := func(way string) string { return filepath.Join(h.vault, "10-projects", "hide-"+way+".md") }
	h.readWay("mmap", note("mmap"), readMmap)
	h.readWay("sendfile", note("sendfile"), func(p string) (string, error) { return readInto(p, h.inbox, "sendfile") })
	h.readWay("copy_file_range", note("copy_file_range"), func(p string) (string, error) { return readInto(p, h.inbox, "copy_file_range") })
	h.readWay("proc-self-fd", note("proc-self-fd"), readProcFd)
	h.readWay("openat-dirfd", note("openat-dirfd"), readDirfd)
	h.readWay("symlink-in-tmp", note("symlink-in-tmp"), func(p string) (string, error) {
		l := filepath.Join(os.TempDir(), "hide-link")
		_ = os.Remove(l)
		if err := os.Symlink(p, l); err != nil {
			return "", err
		}
		b, err := os.ReadFile(l)
		return string(b), err
	})
	h.readWay("child-exits-at-once", note("child-exits-at-once"), readChild)
	// The hard link: expected to fail with EXDEV.
	l := filepath.Join(h.workdir, "hide-hardlink")
	_ = os.Remove(l)
	err := os.Link(note("hardlink"), l)
	h.report("read-hardlink", note("hardlink"), err)
}

// readWay runs read on p and reports what it saw.
func (h *H) readWay(way, p string, read func(string) (string, error)) {
	saw, err := read(p)
	r := Result{Attempt: "read-" + way, Target: p, OK: err == nil, Positive: true, Saw: strings.TrimSpace(saw)}
	if err != nil {
		r.Err = err.Error()
		var e syscall.Errno
		if errors.As(err, &e) {
			r.Errno = errName(e)
		}
	}
	h.emit(r)
}

// readMmap maps the note and closes the descriptor before touching the
// pages: the bytes are read with no descriptor open.
func readMmap(p string) (string, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return "", err
	}
	m, err := unix.Mmap(fd, 0, int(st.Size), unix.PROT_READ, unix.MAP_PRIVATE)
	unix.Close(fd)
	if err != nil {
		return "", err
	}
	defer unix.Munmap(m)
	return string(append([]byte{}, m...)), nil
}

// readInto copies the note into a file of the inbox in the kernel
// (sendfile or copy_file_range: no read(2) of the note), then reads the
// copy.
func readInto(p, dir, how string) (string, error) {
	src, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(src)
	var st unix.Stat_t
	if err := unix.Fstat(src, &st); err != nil {
		return "", err
	}
	dst := filepath.Join(dir, "copy-"+how)
	out, err := unix.Open(dst, unix.O_RDWR|unix.O_CREAT|unix.O_TRUNC|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return "", err
	}
	defer os.Remove(dst)
	defer unix.Close(out)
	if how == "sendfile" {
		_, err = unix.Sendfile(out, src, nil, int(st.Size))
	} else {
		_, err = unix.CopyFileRange(src, nil, out, nil, int(st.Size), 0)
	}
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(dst)
	return string(b), err
}

// readProcFd opens the note O_PATH (no open event for it: an O_PATH
// descriptor cannot read) and reopens it through /proc/self/fd.
func readProcFd(p string) (string, error) {
	fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(fd)
	b, err := os.ReadFile("/proc/self/fd/" + strconv.Itoa(fd))
	return string(b), err
}

// readDirfd opens the note relative to a descriptor of its folder.
func readDirfd(p string) (string, error) {
	d, err := unix.Open(filepath.Dir(p), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	defer unix.Close(d)
	fd, err := unix.Openat(d, filepath.Base(p), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", err
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	buf := make([]byte, 4096)
	n, err := f.Read(buf)
	return string(buf[:n]), err
}

// readChild has a child read the note to stdout and exit at once; the
// agent itself never opens it.
func readChild(p string) (string, error) {
	out, err := exec.Command("/bin/sh", "-c", `exec head -c 4096 "$0"`, p).Output()
	return string(out), err
}
