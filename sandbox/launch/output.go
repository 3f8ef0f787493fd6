package launch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/vault"
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
//
// agentWritable are the host paths an agent may write (the plan's writable
// paths: an earlier session with the same flags had them too). Below one
// of them no directory of the path is followed if it is a link either —
// an agent could have replaced `out/` by a link to /etc — while links
// above them (a user's ~/proj → /work/proj) are followed as usual.
func openOutput(flag, path string, appendMode bool, agentWritable []string) (*os.File, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, path, err)
	}
	dir, base := filepath.Split(abs)
	if base == "" || base == "." || base == ".." {
		return nil, fmt.Errorf("%s %s: not a file name", flag, path)
	}
	dfd, err := openDirGuarded(filepath.Clean(dir), agentWritable)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, path, err)
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

// openDirGuarded opens dir one component at a time from /, following links
// only while the directory reached so far lies outside agentWritable (by
// its real path, read back from the descriptor).
func openDirGuarded(dir string, agentWritable []string) (int, error) {
	fd, err := unix.Open("/", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	real := "/"
	for _, comp := range strings.Split(strings.Trim(dir, "/"), "/") {
		if comp == "" {
			continue
		}
		flags := unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC
		guarded := false
		for _, w := range agentWritable {
			if vault.Within(real, w) {
				guarded = true
				break
			}
		}
		if guarded {
			flags |= unix.O_NOFOLLOW
		}
		nfd, err := unix.Openat(fd, comp, flags, 0)
		unix.Close(fd)
		next := filepath.Join(real, comp)
		if err != nil {
			if guarded && (errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR)) {
				var st unix.Stat_t
				if unix.Lstat(next, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
					return -1, fmt.Errorf("directory %s is a symbolic link in a path the agent can write (%s): refused, never followed", next, real)
				}
			}
			return -1, fmt.Errorf("open directory %s: %w", next, err)
		}
		fd = nfd
		if r, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd)); err == nil && filepath.IsAbs(r) {
			real = r
		} else {
			real = next
		}
	}
	return fd, nil
}
