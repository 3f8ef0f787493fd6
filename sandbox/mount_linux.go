package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/mounts"
)

// MountError is a failed mount step, naming source, target and operation.
type MountError struct {
	Op     string
	Source string
	Target string
	Err    error
}

func (e *MountError) Error() string {
	if e.Source != "" {
		return fmt.Sprintf("%s %s on %s: %v", e.Op, e.Source, e.Target, e.Err)
	}
	return fmt.Sprintf("%s %s: %v", e.Op, e.Target, e.Err)
}

func (e *MountError) Unwrap() error { return e.Err }

const stageDir = "/tmp/.fedmem-root" // inside the sandbox's private /tmp tmpfs

// buildRoot realises the plan's mounts under a new root and pivots into it.
// It must run inside the new mount namespace, as the owner of the user
// namespace (full capabilities there), before any capability is dropped.
//
// It returns the targets of masks it skipped because this uid cannot reach
// them at all (EACCES on the path): the agent, same uid and no capability,
// cannot either. The caller drops them from the plan before verifying.
//
// idmapped maps a mount's index to the fd of an idmapped clone of its
// source the parent made (identity_linux.go); it is attached as it is.
//
// proposeFd is the socket a proposed workdir's upper layer goes to
// fedmem-run through (mountProposal); 0 without a proposal.
func buildRoot(pl *mounts.Plan, idmapped map[int]int, proposeFd int) (skipped []string, err error) {
	// Nothing we do may propagate back to the host.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return nil, &MountError{Op: "make-rprivate", Target: "/", Err: err}
	}
	// A detached, recursive copy of the host tree, made read-only,
	// nosuid and nodev in one step (mount_setattr with AT_RECURSIVE): no
	// sub-mount is ever attached writable, unlike a bind followed by
	// per-mount remounts.
	rootFd, err := cloneTree("/", unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(rootFd)
	// Clone every bind source now, before the staging tmpfs below shadows
	// /tmp in our view (vaults and workdirs may well live under /tmp).
	srcFds := map[int]int{}
	defer func() {
		for _, fd := range srcFds {
			unix.Close(fd)
		}
	}()
	for i, m := range pl.Mounts {
		if m.Kind != mounts.BindRO && m.Kind != mounts.BindRW {
			continue
		}
		if fd, ok := idmapped[i]; ok && (m.Kind == mounts.BindRW || m.Idmap) {
			srcFds[i] = fd
			continue
		}
		// A writable bind keeps the host's flags, top and below: nothing
		// clears MOUNT_ATTR_RDONLY, so a mount read-only on the host is
		// read-only inside (issue 22: a recursive clear made a read-only
		// bind alias of the vault inside the workdir writable, and in a
		// user namespace it hit the locked flag, EPERM, refusing the
		// session). mounts.Verify checks each such mount (HostReadOnly).
		set := uint64(unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV)
		var clr uint64
		switch {
		case m.Kind == mounts.BindRO && faultVaultWritable && m.Target == pl.Vault:
			clr = unix.MOUNT_ATTR_RDONLY // the fault build's deliberate breach
		case m.Kind == mounts.BindRO:
			set |= unix.MOUNT_ATTR_RDONLY
		}
		var fd int
		var err error
		if m.Kind == mounts.BindRO && m.Why == mounts.WhyListedSocket {
			fd, err = cloneListedSocket(m.Source)
		} else {
			fd, err = cloneTree(m.Source, set, clr)
		}
		if err != nil {
			return nil, err
		}
		srcFds[i] = fd
	}
	// Staging area: a tmpfs private to this namespace, shadowing the host /tmp
	// for our own view only (the agent gets another one below).
	if err := unix.Mount("tmpfs", "/tmp", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700,size=64k"); err != nil {
		return nil, &MountError{Op: "mount tmpfs", Target: "/tmp", Err: err}
	}
	if err := os.Mkdir(stageDir, 0o755); err != nil {
		return nil, &MountError{Op: "mkdir", Target: stageDir, Err: err}
	}
	empty := "/tmp/.fedmem-empty"
	if err := os.WriteFile(empty, nil, 0o000); err != nil {
		return nil, &MountError{Op: "create", Target: empty, Err: err}
	}
	if err := unix.MoveMount(rootFd, "", unix.AT_FDCWD, stageDir, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return nil, &MountError{Op: "move_mount", Source: "/", Target: stageDir, Err: err}
	}
	if fd, ok := idmapped[homeIdmapIndex]; ok {
		// A root caller's home (0700 root on most hosts), idmapped and
		// read-only, under every later mount: the agent reaches its
		// profile's writable paths there and reads what the caller could,
		// secrets masked as always.
		if err := unix.MoveMount(fd, "", unix.AT_FDCWD, filepath.Join(stageDir, pl.Home), unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return nil, &MountError{Op: "move_mount", Source: pl.Home, Target: pl.Home, Err: err}
		}
	}
	var seal []string // hidden tmpfs mounts, made read-only once populated
	for i, m := range pl.Mounts {
		t := filepath.Join(stageDir, m.Target)
		switch m.Kind {
		case mounts.RootRO:
			// done above
		case mounts.Dev:
			if err := buildDev(t, m.Size); err != nil {
				return nil, err
			}
		case mounts.Proc:
			// hidepid=invisible: /proc/<pid> of a process the agent may not
			// ptrace-read does not exist for it — the sandbox's pid 1 is not
			// dumpable (and runs as another uid for a root caller), so the
			// agent cannot even see fedmem's own process (guarantee 5).
			if err := unix.Mount("proc", t, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "hidepid=invisible"); err != nil {
				return nil, &MountError{Op: "mount proc", Target: m.Target, Err: err}
			}
		case mounts.ReadOnly:
			// The knob itself, re-bound read-only: EROFS for every writer,
			// with or without Landlock (runc's readonlyPaths).
			if err := unix.Mount(t, t, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
				return nil, &MountError{Op: "bind", Source: m.Target, Target: m.Target, Err: err}
			}
			attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC}
			if err := unix.MountSetattr(unix.AT_FDCWD, t, unix.AT_RECURSIVE, &attr); err != nil {
				return nil, &MountError{Op: "remount read-only", Target: m.Target, Err: err}
			}
		case mounts.Tmpfs:
			if err := ensureTarget(t, true); err != nil {
				return nil, err
			}
			if err := unix.Mount("tmpfs", t, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, withSize("mode=1777", m.Size)); err != nil {
				return nil, &MountError{Op: "mount tmpfs", Target: m.Target, Err: err}
			}
		case mounts.Hidden:
			if err := ensureTarget(t, true); err != nil {
				return nil, err
			}
			if err := unix.Mount("tmpfs", t, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755,size=64k"); err != nil {
				return nil, &MountError{Op: "mount tmpfs", Target: m.Target, Err: err}
			}
			seal = append(seal, t)
		case mounts.BindRO, mounts.BindRW:
			if m.Kind == mounts.BindRO && m.Why == mounts.WhyListedSocket {
				if err := moveListedSocket(srcFds[i], t, m.Target); err != nil {
					return nil, err
				}
				continue
			}
			if err := ensureTarget(t, m.Dir); err != nil {
				return nil, err
			}
			err := unix.MoveMount(srcFds[i], "", unix.AT_FDCWD, t, unix.MOVE_MOUNT_F_EMPTY_PATH)
			if err != nil {
				return nil, &MountError{Op: "move_mount", Source: m.Source, Target: m.Target, Err: err}
			}
			if m.Propose {
				if err := mountProposal(t, m, srcFds[i], proposeFd); err != nil {
					return nil, err
				}
			}
		case mounts.Protected, mounts.Pinned:
			if err := protectPath(m, t); errors.Is(err, errUnreachable) {
				skipped = append(skipped, m.Target)
			} else if err != nil {
				return nil, err
			}
		case mounts.Masked:
			if _, err := os.Lstat(t); errors.Is(err, os.ErrPermission) {
				// The agent's uid cannot even reach the path (run_as into
				// someone else's 0700 home): nothing to mask.
				skipped = append(skipped, m.Target)
				continue
			}
			if err := ensureTarget(t, m.Dir); err != nil {
				return nil, err
			}
			if m.Dir {
				if err := unix.Mount("tmpfs", t, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0000,size=4k"); err != nil {
					return nil, &MountError{Op: "mask", Target: m.Target, Err: err}
				}
			} else if err := bindFile(empty, t, true); err != nil {
				return nil, err
			}
		default:
			return nil, &MountError{Op: "plan", Target: m.Target, Err: fmt.Errorf("unknown mount kind %q", m.Kind)}
		}
	}
	for _, t := range seal {
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
		if err := unix.MountSetattr(unix.AT_FDCWD, t, 0, &attr); err != nil {
			return nil, &MountError{Op: "seal read-only", Target: strings.TrimPrefix(t, stageDir), Err: err}
		}
	}
	// pivot_root(".", ".") then detach the old root: the host tree we
	// cloned from (writable) stops being reachable from the sandbox.
	if err := unix.Chdir(stageDir); err != nil {
		return nil, &MountError{Op: "chdir", Target: stageDir, Err: err}
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return nil, &MountError{Op: "pivot_root", Target: stageDir, Err: err}
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return nil, &MountError{Op: "detach old root", Target: "/", Err: err}
	}
	if err := unix.Chdir("/"); err != nil {
		return nil, &MountError{Op: "chdir", Target: "/", Err: err}
	}
	return skipped, nil
}

// cloneTree returns a detached recursive copy of the mount tree at src with
// the given attributes set and cleared recursively.
func cloneTree(src string, set, clr uint64) (int, error) {
	fd, err := unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return -1, &MountError{Op: "open_tree", Target: src, Err: err}
	}
	attr := unix.MountAttr{Attr_set: set, Attr_clr: clr, Propagation: unix.MS_PRIVATE}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		unix.Close(fd)
		return -1, &MountError{Op: "mount_setattr", Target: src, Err: err}
	}
	return fd, nil
}

// ensureTarget makes sure a mount point exists. It can only create it where
// the tree is writable (a tmpfs we mounted); on the read-only host tree a
// missing target is an error naming it.
func ensureTarget(t string, dir bool) error {
	fi, err := os.Lstat(t)
	if err == nil {
		if fi.Mode()&os.ModeSymlink != 0 {
			return &MountError{Op: "mount point", Target: strings.TrimPrefix(t, stageDir), Err: errors.New("is a symbolic link")}
		}
		return nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return &MountError{Op: "mount point", Target: strings.TrimPrefix(t, stageDir), Err: err}
	}
	if dir {
		err = os.MkdirAll(t, 0o755)
	} else {
		if err = os.MkdirAll(filepath.Dir(t), 0o755); err == nil {
			var f *os.File
			if f, err = os.OpenFile(t, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644); err == nil {
				f.Close()
			}
		}
	}
	if err != nil {
		return &MountError{Op: "create mount point", Target: strings.TrimPrefix(t, stageDir), Err: err}
	}
	return nil
}

func bindFile(src, t string, ro bool) error {
	if err := ensureTarget(t, false); err != nil {
		return err
	}
	if err := unix.Mount(src, t, "", unix.MS_BIND, ""); err != nil {
		return &MountError{Op: "bind", Source: src, Target: t, Err: err}
	}
	if ro {
		if err := unix.Mount("", t, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
			return &MountError{Op: "remount ro", Target: t, Err: err}
		}
	}
	return nil
}

// buildDev mounts a minimal /dev: a few safe character devices bound from
// the host, a private devpts instance, /dev/shm and the usual symlinks.
func buildDev(t string, shmSize int64) error {
	if err := unix.Mount("tmpfs", t, "tmpfs", unix.MS_NOSUID|unix.MS_NOEXEC, "mode=0755,size=64k"); err != nil {
		return &MountError{Op: "mount tmpfs", Target: "/dev", Err: err}
	}
	for _, d := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		if err := bindFile("/dev/"+d, filepath.Join(t, d), false); err != nil {
			return err
		}
	}
	pts := filepath.Join(t, "pts")
	if err := os.Mkdir(pts, 0o755); err != nil {
		return &MountError{Op: "mkdir", Target: "/dev/pts", Err: err}
	}
	if err := unix.Mount("devpts", pts, "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return &MountError{Op: "mount devpts", Target: "/dev/pts", Err: err}
	}
	shm := filepath.Join(t, "shm")
	if err := os.Mkdir(shm, 0o1777); err != nil {
		return &MountError{Op: "mkdir", Target: "/dev/shm", Err: err}
	}
	if err := unix.Mount("tmpfs", shm, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, withSize("mode=1777", shmSize)); err != nil {
		return &MountError{Op: "mount tmpfs", Target: "/dev/shm", Err: err}
	}
	for name, target := range map[string]string{
		"ptmx": "pts/ptmx", "fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2",
	} {
		if err := os.Symlink(target, filepath.Join(t, name)); err != nil {
			return &MountError{Op: "symlink", Target: "/dev/" + name, Err: err}
		}
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(unix.AT_FDCWD, t, 0, &attr); err != nil {
		return &MountError{Op: "seal read-only", Target: "/dev", Err: err}
	}
	return nil
}

// openListedSocket opens a listed unix socket (or FIFO) of the host with
// no link followed on the way and checks what it is: the plan refuses a
// listed path through a link (mounts rule unix-socket-no-link), and this
// closes the window between the plan and the bind (another session's
// agent swapping a folder of a listed socket in a shared workdir for a
// link, or the socket for a directory or a secret file).
func openListedSocket(src string) (int, error) {
	fd, err := openNoLinks(src)
	if err != nil {
		return -1, &MountError{Op: "open listed socket (no link followed; rule " + mounts.RuleSocketNoLink + ")", Target: src, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, &MountError{Op: "stat listed socket", Target: src, Err: err}
	}
	if f := st.Mode & unix.S_IFMT; f != unix.S_IFSOCK && f != unix.S_IFIFO {
		unix.Close(fd)
		return -1, &MountError{Op: "listed socket", Target: src, Err: fmt.Errorf("not a unix socket or FIFO (mode %#o): not bound", st.Mode)}
	}
	return fd, nil
}

// cloneListedSocket: a detached read-only bind of the listed socket src
// (openListedSocket), as cloneTree makes one of a tree.
func cloneListedSocket(src string) (int, error) {
	pfd, err := openListedSocket(src)
	if err != nil {
		return -1, err
	}
	defer unix.Close(pfd)
	fd, err := unix.OpenTree(pfd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	if err != nil {
		return -1, &MountError{Op: "open_tree", Target: src, Err: err}
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV, Propagation: unix.MS_PRIVATE}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		unix.Close(fd)
		return -1, &MountError{Op: "mount_setattr", Target: src, Err: err}
	}
	return fd, nil
}

// moveListedSocket attaches a listed socket's bind at t (the staged path
// of target) with no link followed on the way: the deepest existing
// folder of t is checked before a mount point is made in it, and the bind
// goes onto a handle of the mount point, not its name.
func moveListedSocket(src int, t, target string) error {
	d := filepath.Dir(t)
	for d != stageDir && d != "/" {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		d = filepath.Dir(d)
	}
	fd, err := openNoLinks(d)
	if err != nil {
		return &MountError{Op: "mount point (no link followed; rule " + mounts.RuleSocketNoLink + ")", Target: target, Err: err}
	}
	var st unix.Stat_t
	err = unix.Fstat(fd, &st)
	unix.Close(fd)
	if err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		err = errors.New("a folder on the way is a symbolic link or not a folder")
	}
	if err != nil {
		return &MountError{Op: "mount point (no link followed; rule " + mounts.RuleSocketNoLink + ")", Target: target, Err: err}
	}
	if err := ensureTarget(t, false); err != nil {
		return err
	}
	tfd, err := openNoLinks(t)
	if err != nil {
		return &MountError{Op: "mount point (no link followed; rule " + mounts.RuleSocketNoLink + ")", Target: target, Err: err}
	}
	defer unix.Close(tfd)
	if err := unix.MoveMount(src, "", tfd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return &MountError{Op: "move_mount", Source: target, Target: target, Err: err}
	}
	return nil
}
