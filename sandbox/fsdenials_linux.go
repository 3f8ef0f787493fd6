package sandbox

import (
	"errors"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/sandbox/seccomp"
	"github.com/fedmem/fedmem/vault"
)

// Filesystem denials. A write the sandbox refuses fails in the kernel —
// EROFS from a read-only mount (the vault, the root), EACCES from Landlock
// or file permissions — and nothing reports it. The reporting filter
// (seccomp.AssembleWrites) hands the forker thread each call that may
// change the file system by path; the thread reads the path the agent
// passed, predicts what the kernel will answer and reports a refusal, then
// lets the call continue: the kernel decides, the listener never does.
//
// Why the forker thread: reading the agent's memory (/proc/<pid>/mem) and
// resolving its cwd and fds (/proc/<pid>/cwd, fd/N) is a ptrace access
// check. Landlock lets a domain look only into itself and the domains
// nested in it; the agent's domain is the forker's (scopeThread), while
// pid 1's other threads, on kernels without LANDLOCK_RESTRICT_SELF_TSYNC,
// each have a domain of their own. For an agent on another uid the thread
// takes the agent's fsuid and fsgid (it holds CAP_SETUID, CAP_SETGID for
// the fork anyway): /proc/<pid>/mem's check uses the caller's fs
// credentials, and the prediction's permission checks are then the agent's.

// serve runs on the forker thread once the agent is forked, until no
// process of the sandbox uses the filter; wake runs when the signal
// forwarder wrote to wakeW. It returns at once without a listener.
func (r *denialReporter) serve(wake func()) {
	if r == nil || r.fd < 0 {
		return
	}
	if r.agentUID >= 0 {
		// This thread only (raw setfsuid): see the comment at the top.
		_ = unix.Setfsgid(r.agentGID)
		_ = unix.Setfsuid(r.agentUID)
	}
	var drain [64]byte
	l := seccomp.Listener{Fd: r.fd, Decider: r.decider, Writes: r.writes, Wake: r.wakeR,
		OnWake: func() {
			for {
				if n, err := unix.Read(r.wakeR, drain[:]); n <= 0 || err != nil {
					break
				}
			}
			wake()
		},
		Denied: func(pid int, den seccomp.Denial) {
			r.report(&Denied{Kind: "syscall", Syscall: den.Syscall, Rule: den.Rule, Errno: den.Errno, Args: den.Args[:], Pid: pid, Hint: denialHint(den.Rule)})
		},
		Write: func(req *seccomp.WriteRequest) {
			if d := r.predict(req); d != nil {
				r.report(d)
			}
		},
	}
	l.Serve()
}

// maxReportedPath caps a reported path so that a message stays one atomic
// pipe write even when every byte is escaped in JSON.
const maxReportedPath = 512

// predict says whether the kernel will refuse req, from the paths the
// agent passed: the first path it expects refused, with the errno, or
// nil. It runs before the call continues, so it sees the file system as
// the kernel will (short of the agent racing itself).
func (r *denialReporter) predict(req *seccomp.WriteRequest) *Denied {
	c := req.Call
	op := c.Op
	if c.Name == "unlinkat" && req.Args[2]&unix.AT_REMOVEDIR != 0 {
		op = "rmdir"
	}
	var mnt []uint64
	var first *Denied
	for _, a := range req.Paths {
		if a.Path == "" {
			return nil // AT_EMPTY_PATH: an fd, not a path
		}
		t, err := r.check(req.Pid, a, c, req.Flags)
		if err != nil {
			return nil
		}
		mnt = append(mnt, t.mnt)
		if first == nil && t.errno != 0 {
			first = &Denied{Kind: "filesystem", Op: op, Syscall: c.Name, Path: t.display, Errno: unix.ErrnoName(t.errno), Pid: req.Pid, Hint: r.fsHint(t)}
		}
	}
	if len(mnt) == 2 && mnt[0] != mnt[1] {
		return nil // rename or link across mounts: EXDEV, not a denial
	}
	return first
}

// target is what one path's check found.
type target struct {
	display string // the path as the report shows it: absolute, cleaned
	real    string // the nearest existing object, symlinks resolved
	mnt     uint64
	errno   unix.Errno
	reason  string // "readonly", "landlock", "permissions"
}

// check resolves one path argument of pid's call the way the kernel will
// (relative to its cwd or the directory fd, in this mount namespace, which
// is the agent's: it can neither chroot nor unshare) down to the nearest
// object that exists, and predicts the errno.
func (r *denialReporter) check(pid int, a seccomp.WritePath, c *seccomp.WriteCall, flags uint64) (*target, error) {
	proc := "/proc/" + strconv.Itoa(pid)
	base := "/"
	if !strings.HasPrefix(a.Path, "/") {
		if a.Dirfd == unix.AT_FDCWD {
			base = proc + "/cwd"
		} else {
			base = proc + "/fd/" + strconv.Itoa(a.Dirfd)
		}
	}
	rel := path.Clean(a.Path)
	if rel == "." || rel == "/" || rel == ".." {
		return &target{}, nil // the kernel refuses these otherwise (EEXIST, EBUSY, EINVAL)
	}
	obj, oerr := unix.Open(join(base, rel), unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if oerr == nil {
		defer unix.Close(obj)
	}
	exists := oerr == nil
	// An entry operation is checked on the directory holding the entry,
	// as is an open that creates a missing file; the rest on the object.
	// The kernel's order decides what is a denial: creating what exists is
	// EEXIST, anything under a missing directory ENOENT, both before the
	// mount is checked; removing and renaming check the mount first.
	create := c.Op == "mkdir" || c.Op == "mknod" || c.Op == "symlink" || c.Op == "link" ||
		(c.Op == "open" && flags&(unix.O_CREAT|unix.O_EXCL) == unix.O_CREAT|unix.O_EXCL)
	entry := c.Entry
	switch {
	case create && exists:
		return &target{}, nil
	case !entry && !exists && c.Op == "open" && flags&unix.O_CREAT != 0:
		entry = true
	case !entry && !exists:
		return &target{}, nil // ENOENT
	}
	fd, rest := obj, ""
	if entry {
		var err error
		fd, err = unix.Open(join(base, path.Dir(rel)), unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return &target{}, nil // ENOENT or the like before the mount check
		}
		defer unix.Close(fd)
		rest = path.Base(rel)
	} else if c.Op == "open" || c.Op == "truncate" || c.Op == "chmod" || c.Op == "utimes" {
		// These follow a final symlink (lchown and AT_SYMLINK_NOFOLLOW
		// aside, which the O_NOFOLLOW open above matches well enough).
		if f2, err := unix.Open(join(base, rel), unix.O_PATH|unix.O_CLOEXEC, 0); err == nil {
			defer unix.Close(f2)
			fd = f2
		}
	}
	fdPath := "/proc/self/fd/" + strconv.Itoa(fd)
	real, err := readlink(fdPath)
	if err != nil {
		return nil, err
	}
	t := &target{real: real}
	t.display = path.Join(real, rest)
	var sx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_TYPE|unix.STATX_MNT_ID, &sx); err != nil {
		return nil, err
	}
	t.mnt = sx.Mnt_id
	mode := uint32(sx.Mode) & unix.S_IFMT
	if !entry && mode != unix.S_IFREG && mode != unix.S_IFDIR && mode != unix.S_IFLNK {
		// A device, fifo or socket is written on a read-only mount too
		// (/dev/null, a pty, a pipe through /proc/self/fd).
		return t, nil
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err == nil && sfs.Flags&unix.ST_RDONLY != 0 {
		t.errno, t.reason = unix.EROFS, "readonly"
		return t, nil
	}
	if r.landlockFS && !c.Metadata && !within(real, r.plan.Writable) {
		t.errno, t.reason = unix.EACCES, "landlock"
		return t, nil
	}
	if !c.Metadata {
		// As the agent (this thread's fsuid and fsgid): W_OK on the file,
		// or on the directory for an entry.
		if err := unix.Faccessat(unix.AT_FDCWD, fdPath, unix.W_OK, unix.AT_EACCESS); errors.Is(err, unix.EACCES) {
			t.errno, t.reason = unix.EACCES, "permissions"
		}
	}
	return t, nil
}

func join(base, rel string) string {
	if strings.HasPrefix(rel, "/") {
		return rel
	}
	return base + "/" + rel
}

func within(p string, dirs []string) bool {
	for _, d := range dirs {
		if vault.Within(p, d) {
			return true
		}
	}
	return false
}

func readlink(p string) (string, error) {
	b := make([]byte, 4096)
	n, err := unix.Readlink(p, b)
	if err != nil {
		return "", err
	}
	return string(b[:n]), nil
}

// fsHint says how the agent can write there instead.
func (r *denialReporter) fsHint(t *target) string {
	t.display = capPath(t.display)
	pl := r.plan
	switch {
	case vault.Within(t.real, pl.Vault) && !vault.Within(t.real, pl.Inbox):
		return "the vault is read-only: write a draft into $FEDMEM_INBOX (" + pl.Inbox + "); the gate reviews it (docs/vault.md)"
	case t.reason == "permissions":
		return "file permissions refuse the agent's uid here (not a sandbox rule): write under the workdir, $FEDMEM_INBOX or /tmp"
	}
	return "not writable in this sandbox: add the directory to writable: or state: in the profile (docs/profiles.md), or write under the workdir or /tmp"
}

// capPath keeps a reported path valid UTF-8 and at most maxReportedPath
// bytes.
func capPath(p string) string {
	p = strings.ToValidUTF8(p, "\uFFFD")
	if len(p) <= maxReportedPath {
		return p
	}
	p = p[:maxReportedPath]
	for !utf8.ValidString(p) {
		p = p[:len(p)-1]
	}
	return p + "…"
}
