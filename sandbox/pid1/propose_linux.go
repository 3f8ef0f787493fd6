package pid1

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/sandbox"
)

// proposeStage is where the init mounts a proposed workdir's upper tmpfs:
// on the staging tmpfs at /tmp, outside the new root, so the agent never
// sees it (pivot_root detaches it from every path); the overlay and the
// descriptor fedmem-run holds keep it alive.
const proposeStage = "/tmp/.fedmem-propose"

// mountProposal mounts, at t (where the workdir's clone is already
// attached), an overlay whose lower layer is that clone and whose upper
// and work directories are on a fresh tmpfs of m.Size bytes: every write
// of the agent to the workdir lands in memory, capped by the kernel
// (ENOSPC), and nothing reaches the real tree (profile `workdir:
// propose`). It must run in the sandbox's mount namespace with the
// capabilities of its user namespace (overlayfs and tmpfs mount there,
// FS_USERNS_MOUNT). The tmpfs's root goes to fedmem-run over sock
// (SCM_RIGHTS), which turns the upper layer into a proposal after the
// agent ends.
//
// The upper's root takes the owner and mode of the workdir as seen inside
// (a root caller's idmapped clone shows the agent as its owner): the
// overlay's root directory is the upper's, and the agent must be able to
// write there as it could in the real workdir. userxattr: the sandbox's
// user namespace cannot set trusted.* xattrs, so overlayfs keeps its
// opaque-directory marks as user.overlay.* (tmpfs has user xattrs).
//
// src is the workdir's clone (recursive, as attached at t): the workdir's
// own submounts, which an overlay layer does not cross, are put back on top
// of the overlay from it, read-only (proposalSubmounts).
func mountProposal(t string, m mounts.Mount, src, sock int) error {
	if err := os.Mkdir(proposeStage, 0o700); err != nil {
		return &sandbox.MountError{Op: "mkdir", Target: proposeStage, Err: err}
	}
	opts := "mode=0700"
	if m.Size > 0 {
		opts += ",size=" + strconv.FormatInt(m.Size, 10)
	}
	if err := unix.Mount("tmpfs", proposeStage, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return &sandbox.MountError{Op: "mount tmpfs (workdir proposal)", Target: m.Target, Flags: unix.MS_NOSUID | unix.MS_NODEV, Data: opts, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Stat(t, &st); err != nil {
		return &sandbox.MountError{Op: "stat", Target: m.Target, Err: err}
	}
	upper, work := proposeStage+"/upper", proposeStage+"/work"
	for _, d := range []string{upper, work} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return &sandbox.MountError{Op: "mkdir", Target: d, Err: err}
		}
	}
	if err := unix.Chown(upper, int(st.Uid), int(st.Gid)); err != nil {
		return &sandbox.MountError{Op: "chown upper", Target: m.Target, Err: err}
	}
	if err := unix.Chmod(upper, st.Mode&0o7777); err != nil {
		return &sandbox.MountError{Op: "chmod upper", Target: m.Target, Err: err}
	}
	fs, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return &sandbox.MountError{Op: "fsopen overlay", Target: m.Target, Err: err}
	}
	defer unix.Close(fs)
	// lowerdir+ takes one path as it is (no ':' or ',' parsing): any
	// workdir name works.
	for _, kv := range [][2]string{{"lowerdir+", t}, {"upperdir", upper}, {"workdir", work}} {
		if err := unix.FsconfigSetString(fs, kv[0], kv[1]); err != nil {
			return &sandbox.MountError{Op: "overlay " + kv[0], Source: kv[1], Target: m.Target, Err: err}
		}
	}
	if err := unix.FsconfigSetFlag(fs, "userxattr"); err != nil {
		return &sandbox.MountError{Op: "overlay userxattr", Target: m.Target, Err: err}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		if subs, _ := workdirSubmounts(m.Source); err == unix.EINVAL && len(subs) > 0 {
			// An unprivileged caller's clone of the workdir carries its
			// submounts locked: the kernel refuses a layer with locked
			// children (it would uncover what they hide).
			err = fmt.Errorf("%w: the workdir holds a mount (%s), and the kernel refuses an overlay over a tree with locked submounts, which an unprivileged caller's is (rule: a proposal never shows a submount writable nor uncovers it): run as root, or use workdir: direct", err, subs[0])
		}
		return &sandbox.MountError{Op: "overlay create", Source: m.Source, Target: m.Target, Err: err}
	}
	mnt, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return &sandbox.MountError{Op: "fsmount overlay", Target: m.Target, Err: err}
	}
	defer unix.Close(mnt)
	if err := unix.MoveMount(mnt, "", unix.AT_FDCWD, t, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return &sandbox.MountError{Op: "move_mount overlay", Source: m.Source, Target: m.Target, Err: err}
	}
	if err := proposalSubmounts(t, m, src); err != nil {
		return err
	}
	root, err := unix.Open(proposeStage, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return &sandbox.MountError{Op: "open", Target: proposeStage, Err: err}
	}
	defer unix.Close(root)
	if sock <= 0 {
		return &sandbox.MountError{Op: "workdir proposal", Target: m.Target, Err: fmt.Errorf("no socket to hand the proposal to fedmem-run")}
	}
	if err := unix.Sendmsg(sock, []byte{'u'}, unix.UnixRights(root), nil, 0); err != nil {
		return &sandbox.MountError{Op: "hand the proposal to fedmem-run", Target: m.Target, Err: err}
	}
	return nil
}

// proposalSubmounts attaches, over the overlay at t, a read-only clone of
// every mount below the workdir on the host (the topmost at each point,
// with what is mounted beneath it), taken from the workdir's clone src: a
// read-only submount stays read-only (issue 22 item 1, mounts.Verify's
// host-readonly), and a writable one is read-only too — a write there
// would reach a real tree, which a proposal never lets happen.
func proposalSubmounts(t string, m mounts.Mount, src int) error {
	top, err := workdirSubmounts(m.Source)
	if err != nil {
		return &sandbox.MountError{Op: "read mountinfo", Target: m.Target, Err: err}
	}
	for _, p := range top {
		rel := strings.TrimPrefix(p, m.Source+"/")
		fd, err := unix.OpenTree(src, rel, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_SYMLINK_NOFOLLOW)
		if err != nil {
			return &sandbox.MountError{Op: "open_tree (workdir submount)", Source: p, Target: m.Target, Err: err}
		}
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV, Propagation: unix.MS_PRIVATE}
		err = unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr)
		if err == nil {
			err = unix.MoveMount(fd, "", unix.AT_FDCWD, filepath.Join(t, rel), unix.MOVE_MOUNT_F_EMPTY_PATH)
		}
		unix.Close(fd)
		if err != nil {
			return &sandbox.MountError{Op: "attach workdir submount read-only", Source: p, Target: filepath.Join(m.Target, rel), Err: err}
		}
	}
	return nil
}

// workdirSubmounts are the topmost mount points strictly below dir in this
// mount namespace (the host's copy, before pivot_root), sorted.
func workdirSubmounts(dir string) ([]string, error) {
	infos, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		return nil, err
	}
	var points []string
	for _, i := range infos {
		if i.Mountpoint != dir && strings.HasPrefix(i.Mountpoint, dir+"/") {
			points = append(points, i.Mountpoint)
		}
	}
	sort.Strings(points)
	var top []string
	for _, p := range points {
		if n := len(top); n > 0 && (p == top[n-1] || strings.HasPrefix(p, top[n-1]+"/")) {
			continue // inside one already cloned (recursively)
		}
		top = append(top, p)
	}
	return top, nil
}
