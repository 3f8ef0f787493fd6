package launch

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/mounts"
)

// prepareState makes every profile state bind of the plan ready: the
// per-profile source (~/.local/share/fedmem/<profile>/<path>) and the mount
// point under $HOME exist, and a seeded copy is refreshed from the user's
// own file when that one is newer. It runs as the caller, before the
// sandbox exists, on paths the agent may have written in an earlier
// session: every component is opened relative to $HOME with O_NOFOLLOW, so
// a link planted in the store is an error naming it, never a way to make
// fedmem-run create or write a file elsewhere.
//
// A home the caller may not write (a service account's, a read-only one:
// EACCES, EPERM, EROFS) has no room for state: that bind is dropped from
// the plan, the path stays what the home holds (read-only to the agent),
// and a warning for each is returned; the run goes on. Any other error (a
// link, a non-directory) refuses the run.
//
// agentUID is the agent's uid: when it is not the home's owner (a root
// caller's agent), the folders made for mount points are 0711 instead of
// 0700, so that the agent can walk through them to the bind (a 0700 ~/go
// made for ~/go/pkg/mod was "permission denied" to it); they list nothing.
func prepareState(pl *mounts.Plan, home string, uid, gid, agentUID int) ([]string, error) {
	mountMode := uint32(0o700)
	if agentUID != uid {
		mountMode = 0o711
	}
	var warnings []string
	kept := pl.Mounts[:0:0]
	for _, m := range pl.Mounts {
		if !m.State {
			kept = append(kept, m)
			continue
		}
		err := prepareStateMount(m, home, uid, gid, mountMode)
		if err != nil && (errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) || errors.Is(err, unix.EROFS)) {
			warnings = append(warnings, fmt.Sprintf("state %s not kept (the home refuses the store: %v)", m.Target, err))
			continue
		}
		if err != nil {
			return nil, err
		}
		kept = append(kept, m)
	}
	pl.Mounts = kept
	return warnings, nil
}

func prepareStateMount(m mounts.Mount, home string, uid, gid int, mountMode uint32) error {
	if m.Seed != "" {
		if err := refreshSeed(home, m.Seed, m.Source, uid, gid); err != nil {
			return fmt.Errorf("state %s: %w", m.Target, err)
		}
	} else if err := ensureUnder(home, m.Source, m.Dir, 0o700, uid, gid); err != nil {
		return fmt.Errorf("state %s: %w", m.Target, err)
	}
	if m.Target != m.Source {
		// The mount point's folders: mountMode (prepareState).
		if err := ensureUnder(home, m.Target, m.Dir, mountMode, uid, gid); err != nil {
			return fmt.Errorf("state %s (mount point): %w", m.Target, err)
		}
	}
	return nil
}

// openDirUnder opens directory rel (slash-separated, relative to home)
// without following a link at any component, creating missing ones (mode
// mode, owned by uid:gid when fedmem-run is root) when create is set.
func openDirUnder(home, rel string, create bool, mode uint32, uid, gid int) (int, error) {
	fd, err := unix.Open(home, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open %s: %w", home, err)
	}
	cur := home
	for _, part := range strings.Split(rel, "/") {
		if part == "" || part == "." {
			continue
		}
		if part == ".." {
			unix.Close(fd)
			return -1, fmt.Errorf("%s: .. in a state path", rel)
		}
		cur = filepath.Join(cur, part)
		next, err := unix.Openat(fd, part, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && create {
			if err = unix.Mkdirat(fd, part, mode); err == nil || errors.Is(err, unix.EEXIST) {
				if err == nil && os.Geteuid() == 0 {
					_ = unix.Fchownat(fd, part, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
				}
				next, err = unix.Openat(fd, part, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}
		}
		unix.Close(fd)
		if err != nil {
			if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
				return -1, fmt.Errorf("%s is a symbolic link or not a directory: refused (state paths are never followed through links)", cur)
			}
			return -1, fmt.Errorf("%s: %w", cur, err)
		}
		fd = next
	}
	return fd, nil
}

func relUnder(home, p string) (string, error) {
	rel, err := filepath.Rel(home, p)
	if err != nil || rel == "." || strings.HasPrefix(rel, "../") || rel == ".." {
		return "", fmt.Errorf("%s is not under %s", p, home)
	}
	return filepath.ToSlash(rel), nil
}

// ensureUnder makes p (under home) exist: a directory, or an empty file.
func ensureUnder(home, p string, dir bool, mode uint32, uid, gid int) error {
	rel, err := relUnder(home, p)
	if err != nil {
		return err
	}
	if dir {
		fd, err := openDirUnder(home, rel, true, mode, uid, gid)
		if err == nil {
			unix.Close(fd)
		}
		return err
	}
	dfd, err := openDirUnder(home, filepath.ToSlash(filepath.Dir(rel)), true, mode, uid, gid)
	if err != nil {
		return err
	}
	defer unix.Close(dfd)
	name := filepath.Base(rel)
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		if st.Mode&unix.S_IFMT != unix.S_IFREG {
			return fmt.Errorf("%s is not a regular file: refused", p)
		}
		return nil
	}
	fd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("create %s: %w", p, err)
	}
	if os.Geteuid() == 0 {
		_ = unix.Fchown(fd, uid, gid)
	}
	return unix.Close(fd)
}

// refreshSeed copies the user's file seed to the per-profile copy when the
// copy is missing or older. The copy is written beside itself under a
// random name and renamed over the old one (renameat replaces a planted
// link, never follows it).
func refreshSeed(home, seed, copyPath string, uid, gid int) error {
	srcRel, err := relUnder(home, seed)
	if err != nil {
		return err
	}
	dstRel, err := relUnder(home, copyPath)
	if err != nil {
		return err
	}
	sdir, err := openDirUnder(home, filepath.ToSlash(filepath.Dir(srcRel)), false, 0, uid, gid)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(sdir)
	sfd, err := unix.Openat(sdir, filepath.Base(srcRel), unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil // nothing to seed from; the copy, if any, stays
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", seed, err)
	}
	src := os.NewFile(uintptr(sfd), seed)
	defer src.Close()
	var sst unix.Stat_t
	if err := unix.Fstat(sfd, &sst); err != nil || sst.Mode&unix.S_IFMT != unix.S_IFREG {
		return fmt.Errorf("%s is not a regular file: not used as a seed", seed)
	}
	ddir, err := openDirUnder(home, filepath.ToSlash(filepath.Dir(dstRel)), true, 0o700, uid, gid)
	if err != nil {
		return err
	}
	defer unix.Close(ddir)
	name := filepath.Base(dstRel)
	var dst unix.Stat_t
	if err := unix.Fstatat(ddir, name, &dst, unix.AT_SYMLINK_NOFOLLOW); err == nil {
		if dst.Mode&unix.S_IFMT == unix.S_IFREG && !newer(sst.Mtim, dst.Mtim) {
			return nil // the copy is as new as the user's file: keep the agent's state
		}
	}
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return err
	}
	tmp := "." + name + ".fedmem-" + hex.EncodeToString(rnd[:])
	tfd, err := unix.Openat(ddir, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("create %s: %w", filepath.Join(filepath.Dir(copyPath), tmp), err)
	}
	t := os.NewFile(uintptr(tfd), tmp)
	_, werr := io.Copy(t, io.LimitReader(src, 64<<20))
	if werr == nil {
		// The copy carries the user's mtime: it is refreshed again only
		// when the user's file changes after this.
		werr = unix.Futimes(tfd, []unix.Timeval{unix.NsecToTimeval(unix.TimespecToNsec(sst.Atim)), unix.NsecToTimeval(unix.TimespecToNsec(sst.Mtim))})
	}
	if werr == nil && os.Geteuid() == 0 {
		werr = unix.Fchown(tfd, uid, gid)
	}
	if cerr := t.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = unix.Renameat(ddir, tmp, ddir, name)
	}
	if werr != nil {
		_ = unix.Unlinkat(ddir, tmp, 0)
		return fmt.Errorf("copy %s to %s: %w", seed, copyPath, werr)
	}
	return nil
}

func newer(a, b unix.Timespec) bool {
	return a.Sec > b.Sec || (a.Sec == b.Sec && a.Nsec > b.Nsec)
}
