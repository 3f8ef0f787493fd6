package pid1

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/sandbox"
	"github.com/fedmem/fedmem/vault/view"
)

// viewLayerSize caps the tmpfs of a view's top layer: whiteouts and the
// rewritten folder pages (each at most view.MaxPageBytes).
const viewLayerSize = "256m"

// mountView puts, at t (where the vault's read-only clone, or a
// vault.visible folder's, is attached), a read-only overlay whose lower
// layers are a fresh top layer (vault/view.BuildLayer: a whiteout at each
// of m.Hide, the folder pages rewritten without them, the mount points of
// points) over the gate's view tree (m.ViewTree: the files in force as
// the gate wrote them from its commit, not the work tree) — or, without
// one (the launcher judged the live vault), over the clone itself: under
// `vault.view: in-force` the notes not in force do not exist inside
// (ENOENT, not empty), issue 21 item 3. tree is the view tree's detached
// clone (-1: it is already attached at treeAt, or there is none). The
// layer's tmpfs is mounted at stage (outside the agent's root, or removed
// before the agent runs) and detached once the overlay holds it, the
// tree's staging mount too. It must run in the sandbox's mount namespace
// with the capabilities of its user namespace (overlayfs and tmpfs mount
// there, FS_USERNS_MOUNT; a whiteout is the one device node an
// unprivileged user namespace may make).
func mountView(t string, m mounts.Mount, stage string, tree int, treeAt string, points []view.Point) error {
	src := t
	if m.ViewTree != "" {
		if tree >= 0 {
			if err := os.Mkdir(treeAt, 0o700); err != nil {
				return &sandbox.MountError{Op: "mkdir", Target: treeAt, Err: err}
			}
			if err := unix.MoveMount(tree, "", unix.AT_FDCWD, treeAt, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
				return &sandbox.MountError{Op: "move_mount (the gate's view tree)", Source: m.ViewTree, Target: treeAt, Err: err}
			}
		}
		fi, err := os.Lstat(treeAt)
		if err != nil || !fi.IsDir() {
			if err == nil {
				err = errors.New("not a folder")
			}
			return &sandbox.MountError{Op: "the gate's view tree (rule vault-view)", Source: m.ViewTree, Target: m.Target, Err: err}
		}
		defer func() {
			unix.Unmount(treeAt, unix.MNT_DETACH) // the overlay holds its own
			os.Remove(treeAt)
		}()
		src = treeAt
	}
	if err := os.Mkdir(stage, 0o700); err != nil {
		return &sandbox.MountError{Op: "mkdir", Target: stage, Err: err}
	}
	const flags = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	opts := "mode=0755,size=" + viewLayerSize
	if err := unix.Mount("tmpfs", stage, "tmpfs", flags, opts); err != nil {
		return &sandbox.MountError{Op: "mount tmpfs (vault view)", Target: m.Target, Flags: flags, Data: opts, Err: err}
	}
	defer func() {
		unix.Unmount(stage, unix.MNT_DETACH) // the overlay keeps its own clone of the layer
		os.Remove(stage)
	}()
	if err := view.BuildLayer(stage, src, m.Hide, points); err != nil {
		return &sandbox.MountError{Op: "vault view layer", Source: m.Source, Target: m.Target, Err: err}
	}
	fs, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return &sandbox.MountError{Op: "fsopen overlay (vault view)", Target: m.Target, Err: err}
	}
	defer unix.Close(fs)
	// lowerdir+ takes one path as it is (no ':' or ',' parsing): any
	// vault name works. The first is the top layer.
	for _, l := range []string{stage, src} {
		if err := unix.FsconfigSetString(fs, "lowerdir+", l); err == unix.EINVAL && l == stage {
			// Linux before 6.8 has no lowerdir+: the one-string form,
			// its separators escaped.
			return mountViewLegacy(t, src, m, stage)
		} else if err != nil {
			return &sandbox.MountError{Op: "overlay lowerdir+ (vault view)", Source: l, Target: m.Target, Err: err}
		}
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return &sandbox.MountError{Op: "overlay create (vault view)", Source: m.Source, Target: m.Target, Err: err}
	}
	mnt, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV)
	if err != nil {
		return &sandbox.MountError{Op: "fsmount overlay (vault view)", Target: m.Target, Err: err}
	}
	defer unix.Close(mnt)
	if err := unix.MoveMount(mnt, "", unix.AT_FDCWD, t, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return &sandbox.MountError{Op: "move_mount overlay (vault view)", Source: m.Source, Target: m.Target, Err: err}
	}
	return nil
}

// planPoints are the mount points the plan's mounts after the i-th put
// below its target, relative to it (BuildLayer).
func planPoints(pl *mounts.Plan, i int) []view.Point {
	target := pl.Mounts[i].Target
	var out []view.Point
	for _, m := range pl.Mounts[i+1:] {
		if rel, ok := strings.CutPrefix(m.Target, target+"/"); ok {
			out = append(out, view.Point{Path: rel, Dir: m.Dir || m.Kind == mounts.Hidden || m.Kind == mounts.Tmpfs})
		}
	}
	return out
}

// subPoints are the mount points subs (below base), relative to it; each
// is looked at under statRoot ("" as it is).
func subPoints(base string, subs []string, statRoot string) []view.Point {
	var out []view.Point
	for _, p := range subs {
		rel, ok := strings.CutPrefix(p, base+"/")
		if !ok {
			continue
		}
		fi, err := os.Lstat(statRoot + p)
		out = append(out, view.Point{Path: rel, Dir: err != nil || fi.IsDir()})
	}
	return out
}

// viewStage is where the i-th view's layer is built.
func viewStage(i int) string { return "/tmp/.fedmem-view-" + strconv.Itoa(i) }

// mountViewOver is mountView over a mount that already holds submounts
// (a container runtime built the root: the inbox and the masks are
// mounted over the vault): they are cloned first, and put back on top of
// the overlay, each where it was, as they were (an overlay layer does not
// cross mounts).
func mountViewOver(t string, m mounts.Mount, stage, treeAt string) error {
	subs, err := workdirSubmounts(t)
	if err != nil {
		return &sandbox.MountError{Op: "read mountinfo", Target: m.Target, Err: err}
	}
	clone, err := unix.OpenTree(unix.AT_FDCWD, t, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_SYMLINK_NOFOLLOW)
	if err != nil {
		return &sandbox.MountError{Op: "open_tree (vault view)", Target: m.Target, Err: err}
	}
	defer unix.Close(clone)
	if err := mountView(t, m, stage, -1, treeAt, subPoints(t, subs, "")); err != nil {
		return err
	}
	for _, p := range subs {
		rel := strings.TrimPrefix(p, t+"/")
		fd, err := unix.OpenTree(clone, rel, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE|unix.AT_SYMLINK_NOFOLLOW)
		if err == nil {
			err = unix.MoveMount(fd, "", unix.AT_FDCWD, p, unix.MOVE_MOUNT_F_EMPTY_PATH)
			unix.Close(fd)
		}
		if err != nil {
			return &sandbox.MountError{Op: "put a vault submount back over the view", Source: p, Target: m.Target, Err: err}
		}
	}
	return nil
}

// finishOCIViews builds the plan's views in a container, over the vault
// mounts the runtime made (the init runs inside the finished root).
func finishOCIViews(pl *mounts.Plan) error {
	for i, m := range pl.Viewed() {
		if err := mountViewOver(m.Target, *m, viewStage(i), mounts.ViewTreeStage(i)); err != nil {
			return err
		}
	}
	return nil
}

// verifyView checks, in the finished root, that every path a view hides
// is absent (rule vault-view): not empty, not there.
func verifyView(pl *mounts.Plan) error {
	for _, m := range pl.Viewed() {
		for _, h := range m.Hide {
			h, err := view.DecodePath(h)
			if err != nil {
				return &mounts.VerifyError{Path: m.Target, Rule: "vault-view", Detail: fmt.Sprintf("hidden path %q: %v", h, err)}
			}
			p := filepath.Join(m.Target, h)
			if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
				if err == nil {
					err = errors.New("it exists")
				}
				return &mounts.VerifyError{Path: p, Rule: "vault-view", Detail: fmt.Sprintf("a path the in-force view hides must be absent inside: %v", err)}
			}
		}
	}
	return nil
}

// mountViewLegacy is mountView's overlay by mount(2) with one lowerdir
// string (Linux 5.11 to 6.7: overlayfs in a user namespace, no
// lowerdir+), each path's '\\', ':' and ',' escaped.
func mountViewLegacy(t, src string, m mounts.Mount, stage string) error {
	esc := strings.NewReplacer(`\`, `\\`, ":", `\:`, ",", `\,`)
	data := "lowerdir=" + esc.Replace(stage) + ":" + esc.Replace(src)
	const flags = unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV
	if err := unix.Mount("overlay", t, "overlay", flags, data); err != nil {
		return &sandbox.MountError{Op: "mount overlay (vault view)", Source: m.Source, Target: m.Target, Flags: flags, Data: data, Err: err}
	}
	return nil
}
