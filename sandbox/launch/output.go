package launch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// openOutput opens a file fedmem-run writes for the caller (--report,
// --events) before the agent starts, so that nothing the agent does later
// redirects it: the directory is opened first, the file is created in it
// O_EXCL|O_NOFOLLOW, or — when it exists — opened O_NOFOLLOW|O_NONBLOCK and
// accepted only as a regular file with one link, owned by the caller. The
// file is then written through the returned descriptor only (no temporary
// file beside it, no rename, no reopen by path): a symbolic link, FIFO,
// device or hard link planted at the path by an earlier agent in its
// workdir is refused, never followed (guarantee 5: fedmem never acts on a
// path the agent controls).
func openOutput(flag, path string, appendMode bool) (*os.File, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, path, err)
	}
	dir, base := filepath.Split(abs)
	if base == "" || base == "." || base == ".." {
		return nil, fmt.Errorf("%s %s: not a file name", flag, path)
	}
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s %s: open directory %s: %w", flag, path, dir, err)
	}
	defer unix.Close(dfd)
	mode := unix.O_WRONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NOCTTY
	if appendMode {
		mode |= unix.O_APPEND
	}
	fd, err := unix.Openat(dfd, base, mode|unix.O_CREAT|unix.O_EXCL, 0o644)
	if errors.Is(err, unix.EEXIST) {
		fd, err = unix.Openat(dfd, base, mode|unix.O_NONBLOCK, 0)
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("%s %s: is a symbolic link: refused (fedmem-run never follows a link at its output paths; remove it)", flag, path)
		}
		if errors.Is(err, unix.ENXIO) {
			return nil, fmt.Errorf("%s %s: not a regular file (a FIFO or socket): refused (remove it, or name a new file)", flag, path)
		}
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", flag, path, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("%s %s: %w", flag, path, err)
		}
		why := ""
		switch {
		case st.Mode&unix.S_IFMT != unix.S_IFREG:
			why = "not a regular file"
		case int(st.Uid) != os.Geteuid():
			why = fmt.Sprintf("owned by uid %d, not by fedmem-run's caller (uid %d)", st.Uid, os.Geteuid())
		case st.Nlink != 1:
			why = fmt.Sprintf("has %d hard links", st.Nlink)
		}
		if why != "" {
			unix.Close(fd)
			return nil, fmt.Errorf("%s %s: %s: refused (remove it, or name a new file)", flag, path, why)
		}
		if err := unix.SetNonblock(fd, false); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("%s %s: %w", flag, path, err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, path, err)
	}
	return os.NewFile(uintptr(fd), abs), nil
}

// rewrite replaces the content of f (opened by openOutput) with b.
func rewrite(f *os.File, b []byte) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		return err
	}
	return nil
}
