package pid1

import (
	"errors"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/sandbox"
)

// Placeholder sources in the staging tmpfs; readable, so that a tool that
// reads the name finds nothing to do rather than an error.
const (
	placeholderFile = "/tmp/.fedmem-placeholder"
	placeholderJSON = "/tmp/.fedmem-placeholder.json"
)

// errUnreachable marks a placeholder the init cannot create because its
// uid may not write the directory: the agent (same uid, no capability)
// cannot create the name either.
var errUnreachable = errors.New("the agent's uid cannot create it either")

// cover mounts the read-only placeholder over the mount point at tfd: an
// empty read-only tmpfs for a directory, a read-only bind of an empty file
// (of "{}" for a .json name) for a file.
func cover(tfd int, target string, dir bool) error {
	if dir {
		return emptyROTmpfs(tfd, target)
	}
	name := filepath.Base(target)
	src := placeholderFile
	content := ""
	if strings.HasSuffix(name, ".json") {
		src, content = placeholderJSON, "{}\n"
	}
	if _, err := os.Lstat(src); errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(src, []byte(content), 0o444); err != nil {
			return &sandbox.MountError{Op: "create", Target: src, Err: err}
		}
	}
	sfd, err := sandbox.OpenNoLinks(src)
	if err != nil {
		return &sandbox.MountError{Op: "open", Target: src, Err: err}
	}
	defer unix.Close(sfd)
	tree, err := unix.OpenTree(sfd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	if err != nil {
		return &sandbox.MountError{Op: "open_tree", Target: src, Err: err}
	}
	defer unix.Close(tree)
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC, Propagation: unix.MS_PRIVATE}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		return &sandbox.MountError{Op: "mount_setattr", Target: target, Attr: attr.Attr_set, Err: err}
	}
	if err := unix.MoveMount(tree, "", tfd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return &sandbox.MountError{Op: "move_mount", Source: src, Target: target, Err: err}
	}
	return nil
}

// emptyROTmpfs mounts a new, empty, read-only tmpfs over fd.
func emptyROTmpfs(fd int, name string) error {
	fsfd, err := unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return &sandbox.MountError{Op: "fsopen tmpfs", Target: name, Err: err}
	}
	defer unix.Close(fsfd)
	for k, v := range map[string]string{"size": "4k", "nr_inodes": "1", "mode": "0555"} {
		if err := unix.FsconfigSetString(fsfd, k, v); err != nil {
			return &sandbox.MountError{Op: "fsconfig " + k, Target: name, Err: err}
		}
	}
	if err := unix.FsconfigCreate(fsfd); err != nil {
		return &sandbox.MountError{Op: "fsconfig create", Target: name, Err: err}
	}
	mfd, err := unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|unix.MOUNT_ATTR_NOEXEC)
	if err != nil {
		return &sandbox.MountError{Op: "fsmount", Target: name, Err: err}
	}
	defer unix.Close(mfd)
	if err := unix.MoveMount(mfd, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return &sandbox.MountError{Op: "move_mount", Target: name, Err: err}
	}
	return nil
}

// isPlaceholder reports whether st is a placeholder mount point: mode 0000
// and empty (a regular file of size 0, or a directory).
func isPlaceholder(st *unix.Stat_t) bool {
	if st.Mode&0o7777 != 0 {
		return false
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return st.Size == 0
	case unix.S_IFDIR:
		return true // rmdir refuses a non-empty one when it is removed
	}
	return false
}

// placeholder creates an empty mode-0000 mount point for an absent name and
// mounts a read-only placeholder over it: an empty read-only tmpfs for a
// directory, a read-only bind of an empty file (or of "{}" for a .json
// name) for a file. The mount point lives on the host (a mount needs one);
// fedmem-run removes it after the session (removePlaceholders).
func placeholder(m mounts.Mount, target string) error {
	dir, name := filepath.Split(target)
	pfd, err := sandbox.OpenNoLinks(strings.TrimSuffix(dir, "/"))
	if err != nil {
		return &sandbox.MountError{Op: "open parent", Target: m.Target, Err: err}
	}
	defer unix.Close(pfd)
	if m.Dir {
		err = unix.Mkdirat(pfd, name, 0)
	} else {
		var f int
		f, err = unix.Openat(pfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err == nil {
			unix.Close(f)
		}
	}
	switch {
	case err == nil, errors.Is(err, unix.EEXIST):
		// EEXIST: made since the plan; protect what is there.
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		return &sandbox.MountError{Op: "create placeholder", Target: m.Target, Err: errUnreachable}
	default:
		return &sandbox.MountError{Op: "create placeholder", Target: m.Target, Err: err}
	}
	tfd, err := unix.Openat2(pfd, name, &unix.OpenHow{Flags: unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS})
	if err != nil {
		return &sandbox.MountError{Op: "open placeholder", Target: m.Target, Err: err}
	}
	defer unix.Close(tfd)
	var st unix.Stat_t
	if err := unix.Fstat(tfd, &st); err != nil {
		return &sandbox.MountError{Op: "stat", Target: m.Target, Err: err}
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return &sandbox.MountError{Op: "protect", Target: m.Target, Err: errors.New("is a symbolic link")}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR && st.Mode&unix.S_IFMT != unix.S_IFREG {
		return &sandbox.MountError{Op: "protect", Target: m.Target, Err: errors.New("is neither a file nor a directory")}
	}
	return cover(tfd, m.Target, st.Mode&unix.S_IFMT == unix.S_IFDIR)
}

// protectPath realises one Protected or Pinned mount on the staged root
// (target is the path under stageDir). It must run inside the new mount
// namespace, before pivot_root. No path component is followed if it is a
// symbolic link (openat2 RESOLVE_NO_SYMLINKS): a link the agent planted in
// an earlier session must not redirect the bind.
func protectPath(m mounts.Mount, target string) error {
	fd, err := sandbox.OpenNoLinks(target)
	switch {
	case err == nil:
		defer unix.Close(fd)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return &sandbox.MountError{Op: "stat", Target: m.Target, Err: err}
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return &sandbox.MountError{Op: "protect", Target: m.Target, Err: errors.New("is a symbolic link: fedmem cannot make it read-only; replace the link by the file it names")}
		}
		if m.Kind == mounts.Pinned {
			return selfBind(fd, m.Target, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
		}
		if isPlaceholder(&st) {
			// Made by fedmem-run for this session (or left by a killed
			// one): cover it like a name that was absent.
			return cover(fd, m.Target, st.Mode&unix.S_IFMT == unix.S_IFDIR)
		}
		return selfBind(fd, m.Target, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	case errors.Is(err, unix.ENOENT) && m.Kind == mounts.Protected:
		return placeholder(m, target)
	case errors.Is(err, unix.ELOOP):
		return &sandbox.MountError{Op: "protect", Target: m.Target, Err: errors.New("a component is a symbolic link: fedmem cannot make it read-only; replace the link by what it names")}
	default:
		return &sandbox.MountError{Op: "open", Target: m.Target, Err: err}
	}
}

// selfBind clones the mount tree at fd (recursively: binds already beneath
// it come along) with set attributes, and mounts it over fd.
func selfBind(fd int, name string, set uint64) error {
	tree, err := unix.OpenTree(fd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH|unix.AT_RECURSIVE)
	if err != nil {
		return &sandbox.MountError{Op: "open_tree", Target: name, Err: err}
	}
	defer unix.Close(tree)
	attr := unix.MountAttr{Attr_set: set, Propagation: unix.MS_PRIVATE}
	if err := unix.MountSetattr(tree, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		return &sandbox.MountError{Op: "mount_setattr", Target: name, Attr: set, Err: err}
	}
	if err := unix.MoveMount(tree, "", fd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return &sandbox.MountError{Op: "move_mount", Target: name, Err: err}
	}
	return nil
}
