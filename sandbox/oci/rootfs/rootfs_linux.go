// Package rootfs makes the container backends' root: a detached,
// recursive, read-only clone of the host's /. Only the runtime helpers
// (cmd/fedmem-runc, cmd/fedmem-containerd) call it, as root.
package rootfs

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// CloneHostRoot mounts at dir a detached, recursive copy of the host's /
// made read-only, nosuid and nodev in one step (mount_setattr with
// AT_RECURSIVE), private: no sub-mount is ever attached writable, which a
// runtime's root.readonly (a remount of the top mount only) would not
// give, and nothing mounted on the host later shows up inside.
func CloneHostRoot(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fd, err := unix.OpenTree(unix.AT_FDCWD, "/", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return fmt.Errorf("open_tree /: %w", err)
	}
	defer unix.Close(fd)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV, Propagation: unix.MS_PRIVATE}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		return fmt.Errorf("mount_setattr /: %w", err)
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, dir, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("move_mount / to %s: %w", dir, err)
	}
	return nil
}

// PrivateDir makes dir an unbindable tmpfs mount (once): clones attached
// below it do not propagate to the host's other mount namespaces, and a
// later recursive clone of "/" leaves it out. (Private alone was not
// enough: each session's clone held a copy of every older clone, so mounts
// grew with every session and a dead session's root could not be removed,
// EBUSY, while a younger one stood.)
func PrivateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	var st, parent unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return err
	}
	if err := unix.Stat(dir+"/..", &parent); err != nil {
		return err
	}
	if st.Dev == parent.Dev {
		if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0700,size=64k"); err != nil {
			return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
		}
	}
	if err := unix.Mount("", dir, "", unix.MS_UNBINDABLE, ""); err != nil {
		return fmt.Errorf("make %s private: %w", dir, err)
	}
	return nil
}

// Release detaches a root CloneHostRoot made and removes its directory.
func Release(dir string) error {
	if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil && err != unix.EINVAL && err != unix.ENOENT {
		return fmt.Errorf("unmount %s: %w", dir, err)
	}
	return os.Remove(dir)
}

// RemoveBundle removes what fedmem-run put in a bundle directory and the
// directory itself — entry by entry, never recursively through a root that
// may still be mounted there (a helper killed mid-way): the directory then
// stays, empty but for that.
func RemoveBundle(dir string) {
	for _, f := range []string{"config.json", "placeholder", "placeholder.json", "limits_hit"} {
		_ = os.Remove(dir + "/" + f)
	}
	for _, d := range []string{"fds", "fifo"} {
		_ = os.RemoveAll(dir + "/" + d) // sockets and FIFOs only
	}
	_ = os.Remove(dir + "/rootfs")
	_ = os.Remove(dir)
}
