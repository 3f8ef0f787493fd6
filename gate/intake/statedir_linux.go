package intake

import (
	"errors"
	"fmt"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ErrUntrustedStateDir is wrapped by Open's error when the state directory
// (or its parent, when the gate would create it) is not one the gate can
// trust: the gate keeps claimed drafts, decisions and its audit log there,
// so a directory another user made or may write would let that user forge
// decisions or redirect the gate's writes through planted links.
var ErrUntrustedStateDir = errors.New("untrusted gate state directory")

// PrepareStateDir makes sure state is a directory the gate (euid uid) can
// trust, creating it only when it is absent and its parent is trusted, and
// creates the private sub-folders. Rules, each named in the error:
//   - the state directory is a real directory, not a symbolic link (its last
//     component is opened with O_NOFOLLOW) and not a file;
//   - it is owned by the gate's uid and no group or other write bit is set;
//   - when absent, its parent must be owned by root or the gate's uid and
//     writable by nobody else (a planter could otherwise swap it later);
//   - each sub-folder is a real directory owned by the gate, mode 0700.
func PrepareStateDir(state string, uid int, subdirs []string) error {
	fd, err := unix.Open(state, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		if err := trustedParent(state, uid); err != nil {
			return err
		}
		if err := unix.Mkdir(state, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("state dir %s: create: %w", state, err)
		}
		fd, err = unix.Open(state, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return fmt.Errorf("state dir %s is a symbolic link or not a directory: refusing it (rule: the gate's state directory must be a real directory owned by the gate user; remove it and run `fedmem init`): %w", state, ErrUntrustedStateDir)
	}
	if err != nil {
		return fmt.Errorf("state dir %s: %w", state, err)
	}
	defer unix.Close(fd)
	if err := checkOwnDir(fd, state, uid, 0o022); err != nil {
		return err
	}
	for _, sub := range subdirs {
		if err := unix.Mkdirat(fd, sub, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("state dir %s: %w", filepath.Join(state, sub), err)
		}
		sfd, err := unix.Openat(fd, sub, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			return fmt.Errorf("state dir %s is a symbolic link or not a directory: refusing it (rule: no links inside the gate's state directory): %w", filepath.Join(state, sub), ErrUntrustedStateDir)
		}
		if err != nil {
			return fmt.Errorf("state dir %s: %w", filepath.Join(state, sub), err)
		}
		err = checkOwnDir(sfd, filepath.Join(state, sub), uid, 0o077)
		unix.Close(sfd)
		if err != nil {
			return err
		}
	}
	// 0711: reviewers may reach the review socket by its name; nothing
	// can be listed, and every file inside is 0600 in 0700 folders.
	if err := unix.Fchmod(fd, 0o711); err != nil {
		return fmt.Errorf("state dir %s: chmod: %w", state, err)
	}
	return nil
}

// checkOwnDir checks the directory open at fd is owned by uid and has none
// of the forbidden permission bits.
func checkOwnDir(fd int, p string, uid int, forbidden uint32) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("state dir %s: %w", p, err)
	}
	if int(st.Uid) != uid {
		return fmt.Errorf("state dir %s is owned by uid %d, not the gate's uid %d: refusing a state directory the gate did not create (rule: owner); remove it and run `fedmem init`: %w", p, st.Uid, uid, ErrUntrustedStateDir)
	}
	if st.Mode&forbidden != 0 {
		return fmt.Errorf("state dir %s has mode %04o: group or others may write it (rule: mode, no group/other write; want 0700): %w", p, st.Mode&0o7777, ErrUntrustedStateDir)
	}
	return nil
}

// trustedParent checks the folder the state directory would be created in.
func trustedParent(state string, uid int) error {
	parent := filepath.Dir(state)
	var st unix.Stat_t
	if err := unix.Stat(parent, &st); err != nil {
		return fmt.Errorf("state dir %s: parent: %w", state, err)
	}
	if int(st.Uid) != uid && st.Uid != 0 {
		return fmt.Errorf("state dir %s does not exist and its parent %s is owned by uid %d (neither root nor the gate's uid %d): refusing to create it there (rule: trusted parent); create it with `fedmem init` or pass --state: %w", state, parent, st.Uid, uid, ErrUntrustedStateDir)
	}
	if st.Mode&0o022 != 0 {
		return fmt.Errorf("state dir %s does not exist and its parent %s has mode %04o, writable by group or others: refusing to create it there (rule: trusted parent); create it with `fedmem init` or pass --state: %w", state, parent, st.Mode&0o7777, ErrUntrustedStateDir)
	}
	return nil
}
