//go:build unix

package profiles

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

var errNotDirectory = syscall.ENOTDIR

// openNoFollow opens p for reading without following a link at its last
// component and without blocking on a FIFO.
func openNoFollow(p string) (*os.File, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC|unix.O_NOCTTY, 0)
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("is a symbolic link (rule: a profile in the search path is a plain file, never followed through a link)")
		}
		return nil, err
	}
	return os.NewFile(uintptr(fd), p), nil
}

// trustedProfileFile is the rule for a profile file found in the search
// path (and for a profile FILE named by path or by `extends:`, Kind
// "file"), as OpenSSH's for its config: a regular file owned by the caller or
// root and not writable by group or others, in folders — up to the search
// folder's parent (.fedmem for a project, fedmem for the user's) — owned by
// the caller or root and not writable by group or others. Otherwise another
// user (or an agent running as one) could have written it: refused, with
// the file and the rule. f is the open file (checked by fstat, so it is
// the file that will be read).
func trustedProfileFile(d SearchDir, p string, f *os.File) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fmt.Errorf("profile %s: %w", p, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%w: %s is not a regular file (rule: a profile in the search path is a plain file)", ErrUntrustedProfile, p)
	}
	if err := trustedOwnerMode(p, "file", st); err != nil {
		return err
	}
	for _, dir := range []string{d.Dir, filepath.Dir(d.Dir)} {
		var ds unix.Stat_t
		if err := unix.Lstat(dir, &ds); err != nil {
			return fmt.Errorf("profile %s: %s: %w", p, dir, err)
		}
		if ds.Mode&unix.S_IFMT == unix.S_IFLNK && d.Kind == SearchProject {
			// The workdir is the agent's: a .fedmem that is a link
			// could lead anywhere it chose.
			return fmt.Errorf("%w: %s is a symbolic link (rule: a project's .fedmem/profiles is a real folder in the project, never followed through a link; it holds %s)", ErrUntrustedProfile, dir, p)
		}
		if ds.Mode&unix.S_IFMT == unix.S_IFLNK {
			if err := unix.Stat(dir, &ds); err != nil {
				return fmt.Errorf("profile %s: %s: %w", p, dir, err)
			}
		}
		if d.Kind == "file" && ds.Uid == 0 && ds.Mode&unix.S_ISVTX != 0 {
			// A profile FILE named by path in /tmp and the like: a
			// root-owned sticky folder lets no one else replace the
			// file (checked above) or its links.
			continue
		}
		if err := trustedOwnerMode(dir, "folder", ds); err != nil {
			return fmt.Errorf("%w (it holds %s)", err, p)
		}
	}
	return nil
}

func trustedOwnerMode(p, what string, st unix.Stat_t) error {
	uid := os.Getuid()
	if int(st.Uid) != uid && st.Uid != 0 {
		return fmt.Errorf("%w: %s is owned by uid %d, not by you (uid %d) or root (rule: a profile %s in the search path belongs to its user or root)", ErrUntrustedProfile, p, st.Uid, uid, what)
	}
	if st.Mode&0o022 != 0 {
		return fmt.Errorf("%w: %s is writable by group or others (mode %04o; rule: a profile %s in the search path is writable by its owner only: chmod go-w %s)", ErrUntrustedProfile, p, st.Mode&0o7777, what, p)
	}
	return nil
}

// trustedStoreFile: the allow store is a regular file owned by the caller
// or root and writable by its owner only (another user's hash would be an
// allow the caller never gave).
func trustedStoreFile(p string, f *os.File) error {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fmt.Errorf("allow store %s: %w", p, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%w: allow store %s is not a regular file", ErrUntrustedProfile, p)
	}
	return trustedOwnerMode(p, "allow store", st)
}
