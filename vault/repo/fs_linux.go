package repo

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/go-git/go-git/v5/plumbing"
	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/vault"
)

// writer creates and repairs the paths Init manages. Every change of owner or
// mode goes through a file descriptor opened with O_NOFOLLOW, so a symbolic
// link planted in the world-writable inbox cannot redirect a chown or chmod
// made as root onto another file (the classic /tmp race).
type writer struct {
	root string
	gate vault.Owner
	res  *Result
}

func (w *writer) note(rel, format string, args ...any) {
	w.res.Actions = append(w.res.Actions, Action{Path: rel, What: fmt.Sprintf(format, args...)})
}

func (w *writer) abs(rel string) string { return filepath.Join(w.root, filepath.FromSlash(rel)) }

// dir makes sure rel is a directory owned by the gate user and gid with mode.
// inInbox marks a path any agent could have created first: if it exists and
// is not the gate's, Init stops rather than adopt it.
func (w *writer) dir(rel string, mode os.FileMode, gid int, inInbox bool) error {
	p := w.abs(rel)
	created := false
	if err := unix.Mkdir(p, 0o700); err == nil {
		created = true
	} else if !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("create %s: %w", p, err)
	}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			return fmt.Errorf("%s: expected a folder, found %s; move it away and run init again", p, describe(p))
		}
		return fmt.Errorf("open %s: %w", p, err)
	}
	defer unix.Close(fd)
	if created {
		w.note(rel, "created folder")
	}
	return w.fix(fd, rel, p, mode, gid, inInbox && !created)
}

// file checks the managed file rel: if it exists it must be a regular file;
// its owner and mode are repaired. It reports whether it exists.
func (w *writer) file(rel string, inInbox bool) (bool, error) {
	p := w.abs(rel)
	// O_NONBLOCK: a FIFO planted under this name must not hang init.
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil {
		if errors.Is(err, unix.ELOOP) {
			return false, fmt.Errorf("%s: expected a regular file, found a symbolic link; move it away and run init again", p)
		}
		return false, fmt.Errorf("open %s: %w", p, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, fmt.Errorf("stat %s: %w", p, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return false, fmt.Errorf("%s: expected a regular file, found %s; move it away and run init again", p, describe(p))
	}
	return true, w.fix(fd, rel, p, FileMode, w.gate.GID, inInbox)
}

// create writes a new managed file; it fails if the name exists by then.
func (w *writer) create(rel string, content []byte, what string) error {
	p := w.abs(rel)
	fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("create %s: %w", p, err)
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	if _, err := f.Write(content); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", p, err)
	}
	w.note(rel, "%s", what)
	return w.fix(int(f.Fd()), rel, p, FileMode, w.gate.GID, false)
}

// fix sets owner gate:gid and mode on the open fd, noting what changed.
func (w *writer) fix(fd int, rel, p string, mode os.FileMode, gid int, refuseForeign bool) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", p, err)
	}
	if refuseForeign && int(st.Uid) != w.gate.UID {
		return fmt.Errorf("%s: %w: it belongs to uid %d, not the gate (uid %d); someone created it in the inbox, inspect and remove it, then run init again",
			p, ErrForeignEntry, st.Uid, w.gate.UID)
	}
	if int(st.Uid) != w.gate.UID || int(st.Gid) != gid {
		if err := unix.Fchown(fd, w.gate.UID, gid); err != nil {
			if errors.Is(err, unix.EPERM) {
				return fmt.Errorf("chown %s to %d:%d: %w (run as root, or as the gate user with --agent-group naming one of its groups)", p, w.gate.UID, gid, err)
			}
			return fmt.Errorf("chown %s to %d:%d: %w", p, w.gate.UID, gid, err)
		}
		if !(len(w.res.Actions) > 0 && w.res.Actions[len(w.res.Actions)-1].Path == rel) {
			w.note(rel, "owner %d:%d -> %d:%d", st.Uid, st.Gid, w.gate.UID, gid)
		}
	}
	// fchown may clear setgid; set the mode afterwards and compare the result.
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", p, err)
	}
	want := unixMode(mode)
	if st.Mode&0o7777 != want {
		if err := unix.Fchmod(fd, want); err != nil {
			return fmt.Errorf("chmod %s to %04o: %w", p, want, err)
		}
		if !(len(w.res.Actions) > 0 && w.res.Actions[len(w.res.Actions)-1].Path == rel) {
			w.note(rel, "mode %04o -> %04o", st.Mode&0o7777, want)
		}
	}
	return nil
}

// gitDir gives everything under .git to the gate user and removes group and
// other write bits, never following symbolic links.
func (w *writer) gitDir() error {
	top := filepath.Join(w.root, ".git")
	changed := 0
	err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		if int(st.Uid) != w.gate.UID || int(st.Gid) != w.gate.GID {
			if err := unix.Lchown(p, w.gate.UID, w.gate.GID); err != nil {
				return fmt.Errorf("chown %s to %d:%d: %w", p, w.gate.UID, w.gate.GID, err)
			}
			changed++
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			return nil
		}
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		if st.Mode&0o022 != 0 {
			if err := unix.Fchmodat(unix.AT_FDCWD, p, st.Mode&0o7777&^0o022, 0); err != nil {
				return fmt.Errorf("chmod %s: %w", p, err)
			}
			changed++
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("fix .git: %w", err)
	}
	if changed > 0 && !w.res.Created {
		w.note(".git", "fixed owner or mode of %d entries", changed)
	}
	return nil
}

func unixMode(m os.FileMode) uint32 {
	n := uint32(m.Perm())
	if m&os.ModeSetuid != 0 {
		n |= unix.S_ISUID
	}
	if m&os.ModeSetgid != 0 {
		n |= unix.S_ISGID
	}
	if m&os.ModeSticky != 0 {
		n |= unix.S_ISVTX
	}
	return n
}

func describe(p string) string {
	fi, err := os.Lstat(p)
	if err != nil {
		return "nothing usable (" + err.Error() + ")"
	}
	switch m := fi.Mode(); {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a folder"
	case m.IsRegular():
		return "a regular file"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device node"
	default:
		return "an unusual file"
	}
}

// currentOwnership reads who owns an existing vault (its root folder) and,
// when 90-inbox/ is restricted to a group (setgid, no access for others),
// which group.
func currentOwnership(root string) (vault.Owner, *vault.Group, error) {
	var st unix.Stat_t
	if err := unix.Lstat(root, &st); err != nil {
		return vault.Owner{}, nil, fmt.Errorf("stat %s: %w", root, err)
	}
	owner := vault.Owner{UID: int(st.Uid), GID: int(st.Gid)}
	if u, err := vault.ResolveUser(fmt.Sprint(st.Uid)); err == nil {
		owner.Name = u.Name
	}
	inbox := filepath.Join(root, vault.InboxDir)
	if err := unix.Lstat(inbox, &st); err != nil {
		return owner, nil, nil // repaired later
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Mode&unix.S_ISGID == 0 || st.Mode&0o007 != 0 {
		return owner, nil, nil
	}
	g := vault.Group{GID: int(st.Gid)}
	if rg, err := vault.ResolveGroup(fmt.Sprint(st.Gid)); err == nil {
		g.Name = rg.Name
	}
	return owner, &g, nil
}

// currentLauncherGroup recognises an existing launcher install: a
// .sessions folder closed to others whose group is not the inbox's.
func currentLauncherGroup(root string) *vault.Group {
	var in, st unix.Stat_t
	if unix.Lstat(filepath.Join(root, vault.InboxDir), &in) != nil || unix.Lstat(filepath.Join(root, vault.SessionsDir), &st) != nil {
		return nil
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR || st.Mode&0o007 != 0 || st.Gid == in.Gid {
		return nil
	}
	g := vault.Group{GID: int(st.Gid)}
	if rg, err := vault.ResolveGroup(fmt.Sprint(st.Gid)); err == nil {
		g.Name = rg.Name
	}
	return &g
}

// differs reports whether the managed file rel no longer hashes to blob. It
// reads through O_NOFOLLOW: file() has already checked it is a regular file.
func (w *writer) differs(rel string, blob plumbing.Hash) (bool, error) {
	p := w.abs(rel)
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, fmt.Errorf("open %s: %w", p, err)
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	// Contract files are small; a huge one is a difference in itself.
	b, err := io.ReadAll(io.LimitReader(f, 16<<20))
	if err != nil {
		return false, fmt.Errorf("read %s: %w", p, err)
	}
	return plumbing.ComputeHash(plumbing.BlobObject, b) != blob, nil
}
