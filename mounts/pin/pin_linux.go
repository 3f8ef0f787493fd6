package pin

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/mounts"
)

// OpenPath opens p as an O_PATH descriptor with no symbolic link
// followed on the way (openat2 RESOLVE_NO_SYMLINKS); a link as the last
// component is opened itself (O_NOFOLLOW), not followed.
func OpenPath(p string) (int, error) {
	return unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
}

// openNoLinks opens p as OpenPath does, and a link as the last component
// is unix.ELOOP too.
func openNoLinks(p string) (int, unix.Stat_t, error) {
	var st unix.Stat_t
	fd, err := OpenPath(p)
	if err != nil {
		return -1, st, err
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, st, err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		unix.Close(fd)
		return -1, st, unix.ELOOP
	}
	return fd, st, nil
}

// Identify is what is at p now, p reached with no link followed.
func Identify(p string) (mounts.Source, error) {
	fd, st, err := openNoLinks(p)
	if err != nil {
		return mounts.Source{}, err
	}
	unix.Close(fd)
	return mounts.Source{Path: p, Dev: uint64(st.Dev), Ino: st.Ino}, nil
}

// why says what an open with no link followed found in words.
func why(err error) string {
	switch {
	case errors.Is(err, unix.ELOOP):
		return "a symbolic link is there or on the way now (it, or a folder above it, was replaced after the plan judged the path)"
	case errors.Is(err, unix.ENOENT):
		return "gone (renamed away or removed after the plan judged it)"
	}
	return err.Error()
}

// Record pins every source of Sources(pl) that exists into pl.Sources;
// one pinned already (an earlier Record), or seen earlier (seen: e.g. the
// workdir right after it was resolved), must still be the same inode. A
// source the plan resolved itself (strict) must exist and have no link
// on the way; another is resolved once here (a profile's writable path
// may be a link the user made) and skipped while it does not exist (the
// launcher creates state folders later: Record runs again after).
func Record(pl *mounts.Plan, seen map[string]mounts.Source) error {
	return RecordIn(pl, seen, nil)
}

// RecordIn is Record with a source's links resolved on the view l (nil:
// as they are now; a Record after the launcher made folders needs that).
func RecordIn(pl *mounts.Plan, seen map[string]mounts.Source, l *mounts.Links) error {
	if pl.Sources == nil {
		pl.Sources = map[string]mounts.Source{}
	}
	for _, src := range Sources(pl) {
		want, ok := pl.Sources[src]
		if !ok {
			want, ok = seen[src]
		}
		p := src
		if ok {
			p = want.Path
		} else if !strict(pl, src) {
			r, err := l.EvalSymlinks(src)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return &Error{Path: src, Detail: err.Error()}
			}
			p = r
		}
		got, err := Identify(p)
		if errors.Is(err, unix.ENOENT) && !ok && !strict(pl, src) {
			continue
		}
		if err != nil {
			return &Error{Path: src, Detail: why(err)}
		}
		if ok && (got.Dev != want.Dev || got.Ino != want.Ino) {
			return &Error{Path: src, Detail: swapped(got, want)}
		}
		pl.Sources[src] = got
	}
	return nil
}

func swapped(got, want mounts.Source) string {
	return fmt.Sprintf("another file is at %s now (dev:ino %d:%d, pinned %d:%d when the plan was made): it was renamed into its place since", want.Path, got.Dev, got.Ino, want.Dev, want.Ino)
}

// Open opens the writable source src of pl as an O_PATH descriptor, for
// open_tree(fd, "", AT_EMPTY_PATH): the pinned path with no link
// followed, which must be the pinned inode, still at that path
// (/proc/self/fd). A source Record did not pin (pl.Sources nil: a plan
// made by hand) is opened by its own path, no link followed; one absent
// then returns unix.ENOENT as it is (the caller reports a missing source),
// one that appeared since the last Record is refused.
func Open(pl *mounts.Plan, src string) (int, unix.Stat_t, error) {
	want, pinned := pl.Sources[src]
	p := src
	if pinned {
		p = want.Path
	}
	fd, st, err := openNoLinks(p)
	if err != nil {
		if !pinned && errors.Is(err, unix.ENOENT) {
			return -1, st, err
		}
		return -1, st, &Error{Path: src, Detail: why(err)}
	}
	fail := func(detail string) (int, unix.Stat_t, error) {
		unix.Close(fd)
		return -1, st, &Error{Path: src, Detail: detail}
	}
	if !pinned {
		if pl.Sources != nil {
			return fail("it did not exist when the plan was pinned and appeared since")
		}
		return fd, st, nil
	}
	if uint64(st.Dev) != want.Dev || st.Ino != want.Ino {
		return fail(swapped(mounts.Source{Path: p, Dev: uint64(st.Dev), Ino: st.Ino}, want))
	}
	// The descriptor's own path: a folder above renamed between the
	// open and now (no link involved) shows here.
	if got, err := fdPath(fd); err == nil && got != p {
		return fail(fmt.Sprintf("the folder pinned at %s is at %s now", p, got))
	}
	return fd, st, nil
}

// fdPath is the path of fd as the kernel names it (/proc/self/fd); an
// error when procfs cannot say (the inode checks above still hold).
func fdPath(fd int) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd), buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// CheckAll opens every pinned source (Open) and closes it again: the
// container backends' check right before the runtime, which binds by
// path, starts.
func CheckAll(pl *mounts.Plan) error {
	for src := range pl.Sources {
		fd, _, err := Open(pl, src)
		if err != nil {
			return err
		}
		unix.Close(fd)
	}
	return nil
}

// CheckMounted checks, inside a root a container runtime built, that the
// mount at each pinned writable bind's Target is the pinned inode: the
// runtime binds by path, and the source may have been swapped between
// CheckAll and its mount. Target must be the root of a mount whose mount
// point is Target itself: a swap that the runtime followed for the target
// (a link to /etc/cron.d) and then undid puts the writable bind somewhere
// else while Target shows the pinned folder again, a folder of the
// read-only root, not a mount (red team, helper h-start: 2 runs in 12
// wrote /etc/cron.d under runc).
func CheckMounted(pl *mounts.Plan) error {
	var points map[uint64]string
	for _, m := range pl.Mounts {
		want, ok := pl.Sources[m.Source]
		if m.Kind != mounts.BindRW || !ok || m.Propose {
			continue
		}
		var stx unix.Statx_t
		if err := unix.Statx(unix.AT_FDCWD, m.Target, 0, unix.STATX_INO|unix.STATX_MNT_ID, &stx); err != nil {
			return &Error{Path: m.Source, Detail: fmt.Sprintf("its mount point %s: %v", m.Target, err)}
		}
		dev := unix.Mkdev(stx.Dev_major, stx.Dev_minor)
		if dev != want.Dev || stx.Ino != want.Ino {
			return &Error{Path: m.Source, Detail: fmt.Sprintf("the runtime mounted another file at %s (dev:ino %d:%d, pinned %d:%d): it was swapped before the runtime's bind", m.Target, dev, stx.Ino, want.Dev, want.Ino)}
		}
		if stx.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && stx.Attributes&unix.STATX_ATTR_MOUNT_ROOT == 0 {
			return &Error{Path: m.Source, Detail: fmt.Sprintf("%s is not the root of a mount: the runtime's bind of it went elsewhere (the path was swapped while it bound)", m.Target)}
		}
		if stx.Mask&unix.STATX_MNT_ID == 0 {
			continue
		}
		if points == nil {
			var err error
			if points, err = mountPoints(); err != nil {
				return &Error{Path: m.Source, Detail: "read the mount table: " + err.Error()}
			}
		}
		if p, ok := points[stx.Mnt_id]; !ok || p != m.Target {
			return &Error{Path: m.Source, Detail: fmt.Sprintf("the mount that shows %s is mounted at %q: the runtime's bind went elsewhere (the path was swapped while it bound)", m.Target, p)}
		}
	}
	return nil
}

// mountPoints maps each mount's id to its mount point in this namespace.
func mountPoints() (map[uint64]string, error) {
	infos, err := mountinfo.GetMounts(nil)
	if err != nil {
		return nil, err
	}
	out := make(map[uint64]string, len(infos))
	for _, i := range infos {
		out[uint64(i.ID)] = i.Mountpoint
	}
	return out, nil
}
