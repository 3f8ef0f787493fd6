//go:build unix

package audit

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// openTrustedDir opens dir without following a link in its last component
// and checks it is a directory owned by the caller that nobody else may
// write: an entry another user planted there (a link to a file of their
// choosing) is exactly what must never be appended to.
func openTrustedDir(dir string) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return nil, fmt.Errorf("%s is not a directory (a symbolic link or a file); the state directory must be a real directory: %w", dir, err)
		}
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	d := os.NewFile(uintptr(fd), dir)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		d.Close()
		return nil, err
	}
	if int(st.Uid) != os.Geteuid() {
		d.Close()
		return nil, fmt.Errorf("%s is owned by uid %d, not by this process's uid %d: refusing a directory someone else made", dir, st.Uid, os.Geteuid())
	}
	if st.Mode&0o022 != 0 {
		d.Close()
		return nil, fmt.Errorf("%s has mode %04o: group or others may write it, so its files could be swapped; want no group/other write bits", dir, st.Mode&0o7777)
	}
	return d, nil
}

// openLogFile opens name under d without following links, creating it (mode
// 0600) when create is set, and checks it is a regular file with one link
// owned by the caller.
func openLogFile(d *os.File, name string, create bool) (*os.File, error) {
	flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_NOCTTY
	if create {
		flags = unix.O_RDWR | unix.O_CREAT | unix.O_APPEND | unix.O_NOFOLLOW | unix.O_CLOEXEC | unix.O_NONBLOCK | unix.O_NOCTTY
	}
	fd, err := unix.Openat(int(d.Fd()), name, flags, 0o600)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("is a symbolic link; the gate never writes through a link: %w", err)
		}
		if errors.Is(err, unix.ENOENT) {
			return nil, os.ErrNotExist
		}
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, err
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		f.Close()
		return nil, fmt.Errorf("is not a regular file (mode %o)", st.Mode)
	case st.Nlink != 1:
		f.Close()
		return nil, fmt.Errorf("has %d hard links; want exactly one (a link could expose or redirect the log)", st.Nlink)
	case int(st.Uid) != os.Geteuid():
		f.Close()
		return nil, fmt.Errorf("is owned by uid %d, not by this process's uid %d", st.Uid, os.Geteuid())
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// replaceFile writes b to name under d by a fresh temporary file (created
// O_EXCL, never through a link) renamed over name.
func replaceFile(d *os.File, name string, b []byte) error {
	tmp := name + ".tmp"
	dfd := int(d.Fd())
	_ = unix.Unlinkat(dfd, tmp, 0)
	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, werr := f.Write(b)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		return werr
	}
	return unix.Renameat(dfd, tmp, dfd, name)
}

// openForVerify opens dir/name for reading without following a link in
// either component (verify may run as another user than the gate).
func openForVerify(dir, name string) (*os.File, error) {
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dfd)
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, fmt.Errorf("not a regular file")
	}
	return os.NewFile(uintptr(fd), name), nil
}

func readForVerify(dir, name string) ([]byte, error) {
	f, err := openForVerify(dir, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, 4096))
}
