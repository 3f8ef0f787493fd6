package guard

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/mounts"
)

// Guarantee 6: the paths that make tools run code later (git hooks and
// config, rc files, agent and editor settings) are read-only wherever the
// agent may write. Landlock cannot express this (its rules only grant, and a
// grant on the workdir covers everything beneath it), so the enforcement is
// the mount table: a read-only mount cannot be undone without mount(2),
// which the agent has neither the capability nor the system call (seccomp)
// to make, and a mount point cannot be unlinked, renamed or replaced from
// inside its mount namespace (EBUSY).

// Placeholders runs in fedmem-run, on the host, around the whole
// session: it takes a shared flock(2) on the directory of every Protected
// path and returns the function that, once the sandbox is gone, removes the
// placeholder mount points (empty regular files or empty directories with
// mode 0000, reached without following a link) in each directory that no
// other session still holds. The lock matters: unlinking a name that is a
// mount point in another mount namespace detaches that mount there
// (Linux 3.18, "Lazily remove mounts on unlinked files and directories"),
// so removing a placeholder under a concurrent session in the same workdir
// would lift that session's protection. Anything else at a name — the user
// made it meanwhile — is left alone. Leftovers of a fedmem-run killed before
// its cleanup are protected as existing by the next session and removed at
// its end.
//
// It also moves aside, after the session, every quarantine candidate
// (Plan.QuarantineCandidates: the profiles.AfterSession names, such as a
// planted .git/commondir, and the Plan.Watch names the user's configuration
// names as code) that was absent before it and appeared, and reports it as
// a "persistence" event.
//
// The shared lock is waited for at most placeholderLockWait: another
// session's cleanup holds the exclusive lock for milliseconds, but any
// process that can open the directory can hold it for ever (a concurrent
// session's agent whose writable workdir holds this one's), and a session
// that waited for ever could only be ended by SIGKILL (fedmem-run holds
// the forwarded signals). Past the wait the session is refused (err,
// naming the directory, which the backend reports at stage "protect")
// rather than run with placeholders that another cleanup could detach; release is then still called: it removes
// what it can (the placeholders of the directories it did lock).
func Placeholders(spec *Spec) (release func(coversLost bool), err error) {
	pl := spec.Plan
	// Filesystem timestamps come from the kernel's coarse clock (a jiffy
	// behind the fine one) or, multigrain, from a fine one: the session's
	// start is read on the coarse clock, so that whatever the session
	// makes or changes is stamped at or after it; only a change made in
	// the last jiffy before the start can count as the session's too.
	start := coarseNow()
	// What is done after the session is done through directories opened
	// now, never by path then: a concurrent session's agent whose writable
	// workdir holds this one's can rename the workdir away during the
	// session and leave another directory at its name
	// (TestRedteam4NestedSessionSwapsWorkdir).
	type watched struct {
		path string
		dir  int
	}
	var watch []watched
	for _, p := range pl.QuarantineCandidates() {
		if _, err := os.Lstat(p); errors.Is(err, os.ErrNotExist) {
			if fd, err := openNoLinks(filepath.Dir(p)); err == nil {
				watch = append(watch, watched{p, fd})
			}
		}
	}
	roots := map[string]int{}
	for _, r := range nestedRoots(pl) {
		if fd, err := openNoLinks(r); err == nil {
			roots[r] = fd
		}
	}
	// The mount points of absent names are made here, on the host, as the
	// caller: the sandbox's init may run as another uid that an idmapped
	// workdir does not map (EOVERFLOW), and what it cannot create it
	// cannot protect.
	for _, m := range pl.Placeholders() {
		makePlaceholder(m)
	}
	locks := map[string]int{}
	var refused error
	for _, m := range pl.Mounts {
		dir := filepath.Dir(m.Target)
		// A pinned directory may be another session's placeholder (a
		// concurrent session's empty .git in a non-Git workdir, with this
		// session's placeholders inside): its parent is held too, so that
		// the other session cannot try to remove it while this one's
		// mounts are inside, and this one removes it once empty
		// (TestRedteam2ConcurrentSessionsLeaveNothing; before, the parent
		// was always held for the placeholders beside it).
		if _, ok := locks[dir]; ok || (m.Kind != mounts.Protected && m.Kind != mounts.Pinned) {
			continue
		}
		fd, err := unix.Openat2(unix.AT_FDCWD, dir, &unix.OpenHow{
			Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
		})
		if err == nil {
			wait := placeholderLockWait
			if refused != nil {
				wait = 0 // refused already: one bounded wait per session
			}
			if lerr := flockShared(fd, wait); lerr != nil {
				unix.Close(fd)
				err = lerr
				if errors.Is(lerr, unix.EWOULDBLOCK) && refused == nil {
					refused = fmt.Errorf(
						"%s: another process has held an exclusive flock(2) on it for %s (another session's cleanup takes milliseconds; a process of a concurrent session can hold it for ever): refusing to run with placeholders there unguarded", dir, placeholderLockWait)
				}
			}
		}
		if err != nil {
			fd = -1 // not ours to clean
		}
		locks[dir] = fd
	}
	return func(coversLost bool) {
		for _, w := range watch {
			quarantine(spec, w.dir, w.path)
			unix.Close(w.dir)
		}
		// Deepest first: a directory this session found at a protected
		// name may be another session's placeholder (a concurrent session
		// made workdir/.git; this one then protected the names inside it).
		// Once its own placeholders inside are gone, it is removed too, as
		// a placeholder of its parent, under that parent's exclusive lock
		// (no session still has a mount at it) and only while empty.
		dirs := make([]string, 0, len(locks))
		for dir := range locks {
			dirs = append(dirs, dir)
		}
		sort.Slice(dirs, func(i, j int) bool { return len(dirs[i]) > len(dirs[j]) })
		for _, dir := range dirs {
			fd := locks[dir]
			if fd < 0 {
				continue
			}
			if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil {
				// The names of one directory are independent: removed
				// side by side (issue 9: an rmdir on ext4 costs a
				// fraction of a millisecond, and a session has a dozen
				// placeholders), all before its child directories.
				var wg sync.WaitGroup
				for _, m := range pl.Mounts {
					if m.Kind == mounts.Protected && filepath.Dir(m.Target) == dir {
						wg.Go(func() { removePlaceholder(fd, filepath.Base(m.Target)) })
					}
				}
				wg.Wait()
				for _, child := range dirs {
					if child != dir && filepath.Dir(child) == dir {
						removePlaceholder(fd, filepath.Base(child))
					}
				}
			}
			unix.Close(fd)
		}
		// After the removals: a placeholder another session left at
		// .git, removed above, is not a repository born in this one.
		sweepNestedRepos(spec, roots, start, coversLost)
		for _, fd := range roots {
			unix.Close(fd)
		}
	}, refused
}

// placeholderLockWait bounds the wait for a protected directory's shared
// lock (Placeholders).
const placeholderLockWait = 10 * time.Second

// flockShared takes a shared flock(2) on fd, waiting at most wait (polling
// with LOCK_NB, so the wait is bounded); EWOULDBLOCK once it has passed.
func flockShared(fd int, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	pause := 200 * time.Microsecond
	for {
		err := unix.Flock(fd, unix.LOCK_SH|unix.LOCK_NB)
		if err == unix.EINTR {
			continue
		}
		if err != unix.EWOULDBLOCK || time.Now().After(deadline) {
			return err
		}
		time.Sleep(pause) // no event to wait on: flock(2) has no timeout
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// removePlaceholder removes name in dirfd if it is a placeholder mount point
// (mode 0000 and empty); rmdir itself refuses a directory that is not empty.
func removePlaceholder(dirfd int, name string) {
	switch file, dir := placeholderShape(dirfd, name); {
	case file:
		_ = unix.Unlinkat(dirfd, name, 0)
	case dir:
		_ = unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
	}
}

// placeholderShape says whether name in dirfd (not followed) has the shape
// of a placeholder fedmem makes: mode 0000 and either an empty regular file
// or a directory (whose contents each caller judges: rmdir refuses a full
// one, heldPlaceholder looks inside). A directory made with mode 0 in a
// setgid folder inherits the setgid bit (mkdir(2)): 2000 is a
// placeholder directory's mode too, or the session left a `.git` of mode
// 2000 in a setgid project after it.
func placeholderShape(dirfd int, name string) (file, dir bool) {
	var st unix.Stat_t
	if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return false, false
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		return st.Mode&0o7777 == 0 && st.Size == 0, false
	case unix.S_IFDIR:
		return false, st.Mode&0o7777&^unix.S_ISGID == 0
	}
	return false, false
}

// quarantine renames p, if it exists now, to p.fedmem-quarantined-SESSION
// in its directory, open at pfd since the session's start, and reports it.
func quarantine(spec *Spec, pfd int, p string) {
	dir, name := filepath.Split(p)
	var st unix.Stat_t
	if unix.Fstatat(pfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return
	}
	moveAside(spec, pfd, dir, name, "")
}

// moveAside renames name in dfd (path dir) aside (renameAside) and reports
// it as a "persistence" event: path, moved_to, why (when given) and the
// error of a rename that failed.
func moveAside(spec *Spec, dfd int, dir, name, why string) {
	to, err := renameAside(dfd, name, spec.Plan.Session)
	fields := map[string]any{"path": filepath.Join(dir, name), "moved_to": filepath.Join(dir, to)}
	if why != "" {
		fields["why"] = why
	}
	if err != nil {
		fields["error"] = err.Error()
	}
	emit(spec, "persistence", fields)
}

// quarantineMark is what renameAside puts between a name and the session.
const quarantineMark = ".fedmem-quarantined-"

// renameAside renames name in dfd to NAME.fedmem-quarantined-SESSION, never
// over an existing entry. The agent knows its session (FEDMEM_SESSION) and
// can make that name first, which would keep its plant where it is
// (TestRedteam5QuarantineNameTaken): then a random suffix the agent, gone
// by now, cannot have guessed is added.
func renameAside(dfd int, name, session string) (string, error) {
	try := func() (string, error) {
		to := name + quarantineMark + session
		err := unix.Renameat2(dfd, name, dfd, to, unix.RENAME_NOREPLACE)
		for i := 0; errors.Is(err, unix.EEXIST) && i < 4; i++ {
			to = fmt.Sprintf("%s%s%s-%016x", name, quarantineMark, session, rand.Uint64())
			err = unix.Renameat2(dfd, name, dfd, to, unix.RENAME_NOREPLACE)
		}
		return to, err
	}
	to, err := try()
	if errors.Is(err, unix.EACCES) {
		// An unprivileged caller renames as itself, which needs write
		// permission on the directory: the agent (the same uid) took
		// it away (chmod 555) to keep its plant
		// (TestRedteam5ReadOnlyParent).
		lendMode(dfd, 0o300, func() { to, err = try() })
	}
	return to, err
}

// lendMode runs f with the permission bits add set on the directory open
// at fd (an O_PATH descriptor too), when this process owns it, and puts
// its mode back after: an unprivileged caller's after-session work runs as
// the agent's uid, and the agent can take the caller's own permissions
// away from a directory to hide or keep a plant. Nothing is done (f not
// run) for a directory of another owner or one whose mode cannot be set.
func lendMode(fd int, add uint32, f func()) {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || int(st.Uid) != unix.Geteuid() {
		return
	}
	self := fmt.Sprintf("/proc/self/fd/%d", fd)
	if unix.Chmod(self, st.Mode&0o7777|add) != nil {
		return
	}
	f()
	_ = unix.Chmod(self, st.Mode&0o7777)
}

// makePlaceholder creates the empty mode-0000 mount point of an absent
// Protected name, relative to its parent reached without following a link.
// Failures are left to the init, which fails closed on what it cannot
// protect.
func makePlaceholder(m mounts.Mount) {
	dir, name := filepath.Split(m.Target)
	pfd, err := openNoLinks(strings.TrimSuffix(dir, "/"))
	if err != nil {
		return
	}
	defer unix.Close(pfd)
	if m.Dir {
		_ = unix.Mkdirat(pfd, name, 0)
		return
	}
	if f, err := unix.Openat(pfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err == nil {
		unix.Close(f)
	}
}

// coarseNow is CLOCK_REALTIME_COARSE, the clock file timestamps are taken
// from; the fine clock (less 100 ms) if it cannot be read.
func coarseNow() time.Time {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_REALTIME_COARSE, &ts) != nil {
		return time.Now().Add(-100 * time.Millisecond)
	}
	return time.Unix(ts.Unix())
}
