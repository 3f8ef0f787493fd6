package pid1

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/mounts/pin"
	"github.com/fedmem/fedmem/sandbox"
)

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
//
// inbox is the session folder's device and inode (InitConfig.InboxDev,
// InboxIno): the inbox is cloned from a path only once it was opened
// without following a link and found to be that directory (cloneInbox).
func buildRoot(pl *mounts.Plan, idmapped map[int]int, proposeFd int, inbox inode) (skipped []string, err error) {
	rootFd, err := cloneHostRoot()
	if err != nil {
		return nil, err
	}
	defer unix.Close(rootFd)
	// Clone every bind source now, before the staging tmpfs below shadows
	// /tmp in our view (vaults and workdirs may well live under /tmp).
	b := &rootBuilder{pl: pl, proposeFd: proposeFd, srcFds: map[int]int{}, treeFds: map[int]int{}, inbox: inbox}
	defer b.closeSources()
	if err := b.cloneSources(idmapped); err != nil {
		return nil, err
	}
	if b.empty, err = stageRoot(rootFd); err != nil {
		return nil, err
	}
	if fd, ok := idmapped[sandbox.HomeIdmapIndex]; ok {
		// A root caller's home (0700 root on most hosts), idmapped and
		// read-only, under every later mount: the agent reaches its
		// profile's writable paths there and reads what the caller could,
		// secrets masked as always.
		if err := unix.MoveMount(fd, "", unix.AT_FDCWD, filepath.Join(stageDir, pl.Home), unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return nil, &sandbox.MountError{Op: "move_mount", Source: pl.Home, Target: pl.Home, Err: err}
		}
	}
	for i, m := range pl.Mounts {
		if err := b.mount(i, m); err != nil {
			return nil, err
		}
	}
	if err := b.sealHidden(); err != nil {
		return nil, err
	}
	if err := pivotIntoStage(); err != nil {
		return nil, err
	}
	return b.skipped, nil
}

// cloneHostRoot makes every mount of this namespace private (nothing we do
// may propagate back to the host) and returns a detached, recursive copy
// of the host tree, made read-only, nosuid and nodev in one step
// (mount_setattr with AT_RECURSIVE): no sub-mount is ever attached
// writable, unlike a bind followed by per-mount remounts.
func cloneHostRoot() (int, error) {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return -1, &sandbox.MountError{Op: "make-rprivate", Target: "/", Flags: unix.MS_REC | unix.MS_PRIVATE, Err: err}
	}
	return cloneTree("/", unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, 0)
}

// stageRoot mounts the staging area, a tmpfs private to this namespace
// shadowing the host /tmp for our own view only (the agent gets another
// one), moves the host root's clone rootFd to stageDir in it, and returns
// the empty file masks of files are bound from.
func stageRoot(rootFd int) (empty string, err error) {
	const flags, data = unix.MS_NOSUID | unix.MS_NODEV, "mode=0700,size=64k"
	if err := unix.Mount("tmpfs", "/tmp", "tmpfs", flags, data); err != nil {
		return "", &sandbox.MountError{Op: "mount tmpfs", Target: "/tmp", Flags: flags, Data: data, Err: err}
	}
	if err := os.Mkdir(stageDir, 0o755); err != nil {
		return "", &sandbox.MountError{Op: "mkdir", Target: stageDir, Err: err}
	}
	empty = "/tmp/.fedmem-empty"
	if err := os.WriteFile(empty, nil, 0o000); err != nil {
		return "", &sandbox.MountError{Op: "create", Target: empty, Err: err}
	}
	if err := unix.MoveMount(rootFd, "", unix.AT_FDCWD, stageDir, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return "", &sandbox.MountError{Op: "move_mount", Source: "/", Target: stageDir, Err: err}
	}
	return empty, nil
}

// rootBuilder realises one plan's mounts under stageDir (buildRoot).
type rootBuilder struct {
	pl        *mounts.Plan
	proposeFd int
	inbox     inode // the session folder fedmem-run made
	// srcFds are the detached clones of the binds' sources, by the
	// mount's index in the plan.
	srcFds map[int]int
	// treeFds are the detached clones of the views' trees (ViewTree).
	treeFds map[int]int
	empty   string   // the empty file masks of files are bound from
	seal    []string // hidden tmpfs mounts, made read-only once populated
	// skipped are the masks' targets this uid cannot reach at all.
	skipped []string
}

// cloneSources clones the source of every bind of the plan, detached, or
// takes the idmapped clone the parent made of it.
func (b *rootBuilder) cloneSources(idmapped map[int]int) error {
	for i, m := range b.pl.Mounts {
		if m.Kind != mounts.BindRO && m.Kind != mounts.BindRW {
			continue
		}
		if fd, ok := idmapped[i]; ok && (m.Kind == mounts.BindRW || m.Idmap) {
			b.srcFds[i] = fd
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
		case m.Kind == mounts.BindRO && sandbox.FaultVaultWritable && m.Target == b.pl.Vault:
			clr = unix.MOUNT_ATTR_RDONLY // the fault build's deliberate breach
		case m.Kind == mounts.BindRO:
			set |= unix.MOUNT_ATTR_RDONLY
		}
		var fd int
		var err error
		switch {
		case m.Kind == mounts.BindRO && m.Why == mounts.WhyListedSocket:
			fd, err = cloneListedSocket(m.Source)
		case m.Kind == mounts.BindRW && m.Source == b.pl.Inbox:
			fd, err = cloneInbox(m.Source, b.inbox, set, clr)
		case m.Kind == mounts.BindRW || (m.Why == mounts.WhyHomeTop && b.pl.Sources[m.Source] != (mounts.Source{})):
			fd, err = cloneSource(b.pl, m, set, clr)
		default:
			fd, err = cloneTree(m.Source, set, clr)
		}
		if err != nil {
			return err
		}
		b.srcFds[i] = fd
		if m.View && m.ViewTree != "" {
			// The gate's view tree, read-only, as the overlay's lower
			// layer (mountView).
			fd, err := cloneTree(m.ViewTree, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV, 0)
			if err != nil {
				return err
			}
			b.treeFds[i] = fd
		}
	}
	return nil
}

func (b *rootBuilder) closeSources() {
	for _, fd := range b.srcFds {
		unix.Close(fd)
	}
	for _, fd := range b.treeFds {
		unix.Close(fd)
	}
}

// mount realises the plan's i-th mount, m, at its place under stageDir.
func (b *rootBuilder) mount(i int, m mounts.Mount) error {
	t := filepath.Join(stageDir, m.Target)
	switch m.Kind {
	case mounts.RootRO:
		return nil // stageRoot
	case mounts.Dev:
		return buildDev(t, m.Size)
	case mounts.Proc:
		// hidepid=invisible: /proc/<pid> of a process the agent may not
		// ptrace-read does not exist for it — the sandbox's pid 1 is not
		// dumpable (and runs as another uid for a root caller), so the
		// agent cannot even see fedmem's own process (guarantee 5).
		const flags, data = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, "hidepid=invisible"
		if err := unix.Mount("proc", t, "proc", flags, data); err != nil {
			return &sandbox.MountError{Op: "mount proc", Target: m.Target, Flags: flags, Data: data, Err: err}
		}
	case mounts.ReadOnly:
		return bindReadOnly(t, m.Target)
	case mounts.Tmpfs:
		return mountTmpfs(t, m.Target, unix.MS_NOSUID|unix.MS_NODEV, withSize("mode=1777", m.Size))
	case mounts.Hidden:
		if err := mountTmpfs(t, m.Target, unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755,size=64k"); err != nil {
			return err
		}
		b.seal = append(b.seal, t)
	case mounts.BindRO, mounts.BindRW:
		return b.attachBind(i, m, t)
	case mounts.Protected, mounts.Pinned:
		if err := protectPath(m, t); errors.Is(err, errUnreachable) {
			b.skipped = append(b.skipped, m.Target)
		} else if err != nil {
			return err
		}
	case mounts.Masked:
		return b.mask(m, t)
	default:
		return &sandbox.MountError{Op: "plan", Target: m.Target, Err: fmt.Errorf("unknown mount kind %q", m.Kind)}
	}
	return nil
}

// bindReadOnly re-binds the knob at t (target inside) onto itself
// read-only: EROFS for every writer, with or without Landlock (runc's
// readonlyPaths).
func bindReadOnly(t, target string) error {
	if err := unix.Mount(t, t, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return &sandbox.MountError{Op: "bind", Source: target, Target: target, Flags: unix.MS_BIND | unix.MS_REC, Err: err}
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV | unix.MOUNT_ATTR_NOEXEC}
	if err := unix.MountSetattr(unix.AT_FDCWD, t, unix.AT_RECURSIVE, &attr); err != nil {
		return &sandbox.MountError{Op: "remount read-only", Target: target, Attr: attr.Attr_set, Err: err}
	}
	return nil
}

// mountTmpfs mounts a tmpfs at t (target inside), making its mount point
// first where the tree is writable.
func mountTmpfs(t, target string, flags uintptr, data string) error {
	if err := ensureTarget(t, true); err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", t, "tmpfs", flags, data); err != nil {
		return &sandbox.MountError{Op: "mount tmpfs", Target: target, Flags: flags, Data: data, Err: err}
	}
	return nil
}

// attachBind attaches the clone of the i-th mount's source at t: a listed
// socket with no link followed on the way, a proposed workdir under its
// overlay.
func (b *rootBuilder) attachBind(i int, m mounts.Mount, t string) error {
	if m.Kind == mounts.BindRO && m.Why == mounts.WhyListedSocket {
		return moveListedSocket(b.srcFds[i], t, m.Target)
	}
	if err := ensureTarget(t, m.Dir); err != nil {
		return err
	}
	if err := unix.MoveMount(b.srcFds[i], "", unix.AT_FDCWD, t, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return &sandbox.MountError{Op: "move_mount", Source: m.Source, Target: m.Target, Err: err}
	}
	if m.Propose {
		return mountProposal(t, m, b.srcFds[i], b.proposeFd)
	}
	if m.View {
		subs, err := workdirSubmounts(m.Source)
		if err != nil {
			return &sandbox.MountError{Op: "read mountinfo", Target: m.Target, Err: err}
		}
		points := append(planPoints(b.pl, i), subPoints(m.Source, subs, stageDir)...)
		tree, ok := b.treeFds[i]
		if !ok {
			tree = -1
		}
		if err := mountView(t, m, viewStage(i), tree, mounts.ViewTreeStage(i), points); err != nil {
			return err
		}
		// The vault's own submounts on the host, which the overlay's
		// layer does not cross, go back on top, read-only.
		return proposalSubmounts(t, m, b.srcFds[i])
	}
	return nil
}

// mask hides m's target at t: an empty read-only tmpfs over a directory,
// the empty file bound read-only over a file.
func (b *rootBuilder) mask(m mounts.Mount, t string) error {
	if _, err := os.Lstat(t); errors.Is(err, os.ErrPermission) {
		// The agent's uid cannot even reach the path (run_as into
		// someone else's 0700 home): nothing to mask.
		b.skipped = append(b.skipped, m.Target)
		return nil
	}
	if err := ensureTarget(t, m.Dir); err != nil {
		return err
	}
	if !m.Dir {
		return bindFile(b.empty, t, true)
	}
	const flags, data = unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, "mode=0000,size=4k"
	if err := unix.Mount("tmpfs", t, "tmpfs", flags, data); err != nil {
		return &sandbox.MountError{Op: "mask", Target: m.Target, Flags: flags, Data: data, Err: err}
	}
	return nil
}

// sealHidden makes the hidden tmpfs mounts read-only, now that they hold
// their mount points.
func (b *rootBuilder) sealHidden() error {
	for _, t := range b.seal {
		attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
		if err := unix.MountSetattr(unix.AT_FDCWD, t, 0, &attr); err != nil {
			return &sandbox.MountError{Op: "seal read-only", Target: strings.TrimPrefix(t, stageDir), Attr: attr.Attr_set, Err: err}
		}
	}
	return nil
}

// pivotIntoStage makes stageDir the root: pivot_root(".", ".") then detach
// the old root, so the host tree we cloned from (writable) stops being
// reachable from the sandbox.
func pivotIntoStage() error {
	if err := unix.Chdir(stageDir); err != nil {
		return &sandbox.MountError{Op: "chdir", Target: stageDir, Err: err}
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return &sandbox.MountError{Op: "pivot_root", Target: stageDir, Err: err}
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return &sandbox.MountError{Op: "detach old root", Target: "/", Err: err}
	}
	if err := unix.Chdir("/"); err != nil {
		return &sandbox.MountError{Op: "chdir", Target: "/", Err: err}
	}
	return nil
}

// cloneTree returns a detached recursive copy of the mount tree at src with
// the given attributes set and cleared recursively.
func cloneTree(src string, set, clr uint64) (int, error) {
	return cloneTreeAt(unix.AT_FDCWD, src, 0, src, set, clr)
}

// cloneSource clones a writable source (or a pinned home's read-only top)
// from the folder the plan judged, opened with no link followed and
// checked against its pin (pin.Open), never by name: a concurrent
// session's agent or the owner of a folder above may have swapped it for
// a link or another folder since (rule writable-source-swapped).
func cloneSource(pl *mounts.Plan, m mounts.Mount, set, clr uint64) (int, error) {
	pfd, _, err := pin.Open(pl, m.Source)
	var pe *pin.Error
	if errors.As(err, &pe) {
		return -1, err
	}
	if err != nil {
		return -1, &sandbox.MountError{Op: "open source (no link followed)", Target: m.Source, Err: err}
	}
	defer unix.Close(pfd)
	return cloneTreeAt(pfd, "", unix.AT_EMPTY_PATH, m.Source, set, clr)
}

// cloneTreeAt is cloneTree of path at dirfd (flags: extra open_tree flags,
// e.g. AT_EMPTY_PATH to clone dirfd itself); src names it in errors.
func cloneTreeAt(dirfd int, path string, flags int, src string, set, clr uint64) (int, error) {
	fd, err := unix.OpenTree(dirfd, path, uint(flags)|unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	if err != nil {
		return -1, &sandbox.MountError{Op: "open_tree", Target: src, Err: err}
	}
	attr := unix.MountAttr{Attr_set: set, Attr_clr: clr, Propagation: unix.MS_PRIVATE}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &attr); err != nil {
		unix.Close(fd)
		return -1, &sandbox.MountError{Op: "mount_setattr", Target: src, Attr: set, Clear: clr, Err: err}
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
			return &sandbox.MountError{Op: "mount point", Target: strings.TrimPrefix(t, stageDir), Err: errors.New("is a symbolic link")}
		}
		return nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return &sandbox.MountError{Op: "mount point", Target: strings.TrimPrefix(t, stageDir), Err: err}
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
		return &sandbox.MountError{Op: "create mount point", Target: strings.TrimPrefix(t, stageDir), Err: err}
	}
	return nil
}

func bindFile(src, t string, ro bool) error {
	if err := ensureTarget(t, false); err != nil {
		return err
	}
	if err := unix.Mount(src, t, "", unix.MS_BIND, ""); err != nil {
		return &sandbox.MountError{Op: "bind", Source: src, Target: t, Flags: unix.MS_BIND, Err: err}
	}
	if ro {
		const flags = unix.MS_REMOUNT | unix.MS_BIND | unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV
		if err := unix.Mount("", t, "", flags, ""); err != nil {
			return &sandbox.MountError{Op: "remount ro", Target: t, Flags: flags, Err: err}
		}
	}
	return nil
}

// buildDev mounts a minimal /dev: a few safe character devices bound from
// the host, a private devpts instance, /dev/shm and the usual symlinks.
func buildDev(t string, shmSize int64) error {
	const devFlags, devData = unix.MS_NOSUID | unix.MS_NOEXEC, "mode=0755,size=64k"
	if err := unix.Mount("tmpfs", t, "tmpfs", devFlags, devData); err != nil {
		return &sandbox.MountError{Op: "mount tmpfs", Target: "/dev", Flags: devFlags, Data: devData, Err: err}
	}
	for _, d := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
		if err := bindFile("/dev/"+d, filepath.Join(t, d), false); err != nil {
			return err
		}
	}
	pts := filepath.Join(t, "pts")
	if err := os.Mkdir(pts, 0o755); err != nil {
		return &sandbox.MountError{Op: "mkdir", Target: "/dev/pts", Err: err}
	}
	const ptsFlags, ptsData = unix.MS_NOSUID | unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"
	if err := unix.Mount("devpts", pts, "devpts", ptsFlags, ptsData); err != nil {
		return &sandbox.MountError{Op: "mount devpts", Target: "/dev/pts", Flags: ptsFlags, Data: ptsData, Err: err}
	}
	shm := filepath.Join(t, "shm")
	if err := os.Mkdir(shm, 0o1777); err != nil {
		return &sandbox.MountError{Op: "mkdir", Target: "/dev/shm", Err: err}
	}
	shmData := withSize("mode=1777", shmSize)
	if err := unix.Mount("tmpfs", shm, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, shmData); err != nil {
		return &sandbox.MountError{Op: "mount tmpfs", Target: "/dev/shm", Flags: unix.MS_NOSUID | unix.MS_NODEV, Data: shmData, Err: err}
	}
	for name, target := range map[string]string{
		"ptmx": "pts/ptmx", "fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2",
	} {
		if err := os.Symlink(target, filepath.Join(t, name)); err != nil {
			return &sandbox.MountError{Op: "symlink", Target: "/dev/" + name, Err: err}
		}
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(unix.AT_FDCWD, t, 0, &attr); err != nil {
		return &sandbox.MountError{Op: "seal read-only", Target: "/dev", Attr: attr.Attr_set, Err: err}
	}
	return nil
}

// cloneListedSocket: a detached read-only bind of the listed socket src
// (openListedSocket), as cloneTree makes one of a tree.
func cloneListedSocket(src string) (int, error) {
	pfd, err := sandbox.OpenListedSocket(src)
	if err != nil {
		return -1, err
	}
	defer unix.Close(pfd)
	fd, err := unix.OpenTree(pfd, "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	if err != nil {
		return -1, &sandbox.MountError{Op: "open_tree", Target: src, Err: err}
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID | unix.MOUNT_ATTR_NODEV, Propagation: unix.MS_PRIVATE}
	if err := unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, &attr); err != nil {
		unix.Close(fd)
		return -1, &sandbox.MountError{Op: "mount_setattr", Target: src, Attr: attr.Attr_set, Err: err}
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
	fd, err := sandbox.OpenNoLinks(d)
	if err != nil {
		return &sandbox.MountError{Op: "mount point (no link followed; rule " + mounts.RuleSocketNoLink + ")", Target: target, Err: err}
	}
	var st unix.Stat_t
	err = unix.Fstat(fd, &st)
	unix.Close(fd)
	if err == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		err = errors.New("a folder on the way is a symbolic link or not a folder")
	}
	if err != nil {
		return &sandbox.MountError{Op: "mount point (no link followed; rule " + mounts.RuleSocketNoLink + ")", Target: target, Err: err}
	}
	if err := ensureTarget(t, false); err != nil {
		return err
	}
	tfd, err := sandbox.OpenNoLinks(t)
	if err != nil {
		return &sandbox.MountError{Op: "mount point (no link followed; rule " + mounts.RuleSocketNoLink + ")", Target: target, Err: err}
	}
	defer unix.Close(tfd)
	if err := unix.MoveMount(src, "", tfd, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return &sandbox.MountError{Op: "move_mount", Source: target, Target: target, Err: err}
	}
	return nil
}

// withSize adds a tmpfs size= option (limits.tmp_bytes) to opts; a write
// past it fails with ENOSPC. Without one a tmpfs may grow to half of RAM.
func withSize(opts string, size int64) string {
	if size <= 0 {
		return opts
	}
	return fmt.Sprintf("%s,size=%d", opts, size)
}
