package pid1

import (
	"path"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/sandbox"
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
	l := r.listener
	l.OnWake = func() {
		for {
			if n, err := unix.Read(r.wakeR, drain[:]); n <= 0 || err != nil {
				break
			}
		}
		wake()
	}
	l.Denied = func(pid int, den seccomp.Denial) {
		r.report(&sandbox.Denied{Kind: "syscall", Syscall: den.Syscall, Rule: den.Rule, Errno: den.Errno, Args: den.Args[:], Pid: pid, Hint: denialHint(den.Rule)})
	}
	l.Write = func(req *seccomp.WriteRequest) {
		if d := r.predict(req); d != nil {
			r.report(d)
		}
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
func (r *denialReporter) predict(req *seccomp.WriteRequest) *sandbox.Denied {
	c := req.Call
	op := c.Op
	if c.Name == "unlinkat" && req.Args[2]&unix.AT_REMOVEDIR != 0 {
		op = "rmdir"
	}
	var mnt []uint64
	var first *sandbox.Denied
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
			first = &sandbox.Denied{Kind: "filesystem", Op: op, Syscall: c.Name, Path: t.display, Errno: unix.ErrnoName(t.errno), Pid: req.Pid, Hint: r.fsHint(t)}
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
}

// check resolves one path argument of pid's call the way the kernel will
// (relative to its cwd or the directory fd, in this mount namespace, which
// is the agent's: it can neither chroot nor unshare) and predicts whether
// the mount (EROFS) or Landlock (EACCES, outside the plan's writable
// paths) refuses it. File permissions are not predicted: they are no
// sandbox rule, and the checks cost every write call.
func (r *denialReporter) check(pid int, a seccomp.WritePath, c *seccomp.WriteCall, flags uint64) (*target, error) {
	base := "/"
	if !strings.HasPrefix(a.Path, "/") {
		if a.Dirfd == unix.AT_FDCWD {
			base = "/proc/" + strconv.Itoa(pid) + "/cwd"
		} else {
			base = "/proc/" + strconv.Itoa(pid) + "/fd/" + strconv.Itoa(a.Dirfd)
		}
	}
	rel := path.Clean(a.Path)
	if rel == "." || rel == "/" || rel == ".." {
		return &target{}, nil // the kernel refuses these otherwise (EEXIST, EBUSY, EINVAL)
	}
	// The object: open and truncate, chmod, utimes follow a final
	// symlink (O_NOFOLLOW, lchown and AT_SYMLINK_NOFOLLOW aside, which
	// only change which object a report names); entries never do.
	oflags := unix.O_PATH | unix.O_CLOEXEC
	follow := (c.Op == "open" && flags&unix.O_NOFOLLOW == 0) || c.Op == "truncate" || c.Op == "chmod" || c.Op == "utimes"
	if !follow {
		oflags |= unix.O_NOFOLLOW
	}
	fd, err := unix.Open(join(base, rel), oflags, 0)
	exists := err == nil
	if exists {
		defer unix.Close(fd)
	}
	// An entry operation is checked on the directory holding the entry,
	// as is an open that creates a missing file; the rest on the object.
	// The kernel's order decides what is a denial: creating what exists is
	// EEXIST and anything under a missing directory ENOENT, both before
	// the mount is checked; removing and renaming check the mount first.
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
	rest := ""
	if entry {
		dfd, err := unix.Open(join(base, path.Dir(rel)), unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return &target{}, nil // ENOENT or the like, before the mount check
		}
		defer unix.Close(dfd)
		fd, rest = dfd, path.Base(rel)
	}
	t := &target{}
	if !entry || len(c.Paths) > 1 {
		// The object's type; the mount of each side of a rename or link.
		var sx unix.Statx_t
		if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_TYPE|unix.STATX_MNT_ID, &sx); err != nil {
			return nil, err
		}
		t.mnt = sx.Mnt_id
		if mode := uint32(sx.Mode) & unix.S_IFMT; !entry && mode != unix.S_IFREG && mode != unix.S_IFDIR && mode != unix.S_IFLNK {
			// A device, fifo or socket is written on a read-only mount
			// too (/dev/null, a pty, a pipe through /proc/self/fd), and
			// Landlock grants the devices the plan names.
			return t, nil
		}
	}
	var sfs unix.Statfs_t
	ro := unix.Fstatfs(fd, &sfs) == nil && sfs.Flags&unix.ST_RDONLY != 0
	if !ro && (!r.landlockFS || c.Metadata) {
		return t, nil // the common case: no path needed
	}
	if t.real, err = readlink("/proc/self/fd/" + strconv.Itoa(fd)); err != nil {
		return nil, err
	}
	t.display = capPath(path.Join(t.real, rest))
	switch {
	case ro:
		t.errno = unix.EROFS
	case !within(t.real, r.plan.Writable):
		t.errno = unix.EACCES // Landlock: not under a writable path
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
	pl := r.plan
	switch {
	case vault.Within(t.real, pl.Vault) && !vault.Within(t.real, pl.Inbox):
		return "the vault is read-only: write a draft into $FEDMEM_INBOX (" + pl.Inbox + "); the gate reviews it (docs/vault.md)"
	case homeTopEntry(pl, t.real):
		return "the home lies in a writable path: its top level and its dot-entries are read-only (rule " + mounts.RuleHomeConfig + "); name what the agent needs in home.writable or state (docs/profiles.md), or write inside a project folder"
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

// homeTopEntry: p lies at the top level of a home in a writable path
// (mounts.Plan.HomeTop) or under one of its dot-entries.
func homeTopEntry(pl *mounts.Plan, p string) bool {
	if pl.HomeTop == "" || !vault.Within(p, pl.HomeTop) || p == pl.HomeTop {
		return p == pl.HomeTop && p != ""
	}
	rel := strings.TrimPrefix(p, pl.HomeTop+"/")
	return !strings.Contains(rel, "/") || strings.HasPrefix(rel, ".")
}
