package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func errName(e syscall.Errno) string { return unix.ErrnoName(e) }

// payload is what a successful write leaves behind: a marker the snapshot
// diff will show.
var payload = []byte("\nPWNED by hostile\n")

// fdCensus lists /proc/self/fd with raw syscalls, so that the Go runtime's
// poller has not opened anything yet. The directory fd used for the listing
// is left out.
func fdCensus() Result {
	r := Result{Attempt: "open-fds", Target: "/proc/self/fd"}
	dfd, err := unix.Open("/proc/self/fd", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		r.Errno, r.Err = errnoName(err), err.Error()
		r.OK = true // cannot prove there is no leak
		return r
	}
	defer unix.Close(dfd)
	var names []string
	buf := make([]byte, 8192)
	for {
		n, err := unix.Getdents(dfd, buf)
		if err != nil {
			r.Errno, r.Err, r.OK = errnoName(err), err.Error(), true
			return r
		}
		if n <= 0 {
			break
		}
		_, _, names = syscall.ParseDirent(buf[:n], -1, names)
	}
	var seen []string
	for _, n := range names {
		fd, err := strconv.Atoi(n)
		if err != nil || fd == dfd {
			continue
		}
		link, _ := os.Readlink("/proc/self/fd/" + n)
		seen = append(seen, n+"="+link)
		if fd > 2 {
			r.OK = true
		}
	}
	sort.Strings(seen)
	r.Saw = strings.Join(seen, " ")
	return r
}

// statusChecks reads the process's own security state.
func (h *H) statusChecks() {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		h.check("status", "/proc/self/status", "", true, err)
		return
	}
	fields := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok {
			fields[k] = strings.TrimSpace(v)
		}
	}
	for _, c := range []string{"CapEff", "CapPrm", "CapBnd", "CapAmb", "CapInh"} {
		v := fields[c]
		n, err := strconv.ParseUint(v, 16, 64)
		h.check("capabilities", c, v, err != nil || n != 0, nil)
	}
	h.check("no_new_privs", "NoNewPrivs", fields["NoNewPrivs"], fields["NoNewPrivs"] != "1", nil)
	h.check("seccomp", "Seccomp", fields["Seccomp"], fields["Seccomp"] != "2", nil)
	// Regain capabilities by raising them: capset to full sets.
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	data := [2]unix.CapUserData{{Effective: ^uint32(0), Permitted: ^uint32(0), Inheritable: ^uint32(0)}, {Effective: ^uint32(0), Permitted: ^uint32(0), Inheritable: ^uint32(0)}}
	h.report("capset-raise", "all", unix.Capset(&hdr, &data[0]))
	h.report("prctl-clear-nnp", "PR_SET_NO_NEW_PRIVS=0", unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 0, 0, 0, 0))
	h.report("prctl-ambient-raise", "CAP_SYS_ADMIN", unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_RAISE, unix.CAP_SYS_ADMIN, 0, 0))
	// Changing to another uid needs CAP_SETUID (setuid to the own uid is a
	// no-op that always works, so pick a different one).
	to := 0
	if os.Getuid() == 0 {
		to = 65534
	}
	h.report("setuid-other", "uid "+strconv.Itoa(to), rawErr(unix.RawSyscall(unix.SYS_SETUID, uintptr(to), 0, 0)))
}

func rawErr(_, _ uintptr, e syscall.Errno) error {
	if e != 0 {
		return e
	}
	return nil
}

// vaultMatrix tries every file and directory operation on protected vault
// paths. Targets that are files get file operations, directories get
// directory operations.
func (h *H) vaultMatrix() {
	files := []string{
		h.note,
		filepath.Join(h.vault, ".git/config"),
		filepath.Join(h.vault, ".git/hooks/pre-commit"),
		filepath.Join(h.vault, ".git/refs/heads/main"),
		filepath.Join(h.vault, ".git/HEAD"),
		filepath.Join(h.vault, "00-global/AGENT.md"),
	}
	dirs := []string{h.vault, filepath.Dir(h.note), filepath.Join(h.vault, ".git"), filepath.Join(h.vault, ".git/hooks")}
	if h.other != "" {
		files = append(files, filepath.Join(h.other, h.draft))
		dirs = append(dirs, h.other)
	}
	for i, f := range files {
		h.fileOps(f, i)
	}
	for i, d := range dirs {
		h.dirOps(d, i)
	}
}

func (h *H) openWrite(attempt, path string, flags int) { h.openWriteAs(attempt, path, path, flags) }

// openWriteAs opens path and writes the payload, reporting shown as the
// target (the vault path a symlink or /proc path leads to).
func (h *H) openWriteAs(attempt, path, shown string, flags int) {
	f, err := os.OpenFile(path, flags, 0o644)
	if err == nil {
		_, err = f.Write(payload)
		f.Close()
	}
	h.report(attempt, shown, err)
}

// inboxFile creates a scratch file in the own inbox for rename/link sources.
func (h *H) inboxFile(name string) (string, error) {
	p := filepath.Join(h.inbox, name)
	return p, os.WriteFile(p, []byte("from the inbox\n"), 0o644)
}

var fixedTime = time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)

func (h *H) fileOps(f string, i int) {
	h.openWrite("write", f, os.O_WRONLY)
	h.openWrite("append", f, os.O_WRONLY|os.O_APPEND)
	h.openWrite("open-trunc", f, os.O_WRONLY|os.O_TRUNC)
	h.openWrite("open-rdwr", f, os.O_RDWR)
	h.report("truncate", f, unix.Truncate(f, 0))
	h.report("chmod", f, unix.Chmod(f, 0o777))
	h.report("chown", f, unix.Lchown(f, os.Getuid(), os.Getgid()))
	h.report("utimes", f, os.Chtimes(f, fixedTime, fixedTime))
	h.report("touch-now", f, utimensatNow(unix.AT_FDCWD, f))
	h.report("setxattr-user", f, unix.Lsetxattr(f, "user.hostile", []byte("x"), 0))
	h.report("setxattr-trusted", f, unix.Lsetxattr(f, "trusted.hostile", []byte("x"), 0))
	h.report("setxattr-security-capability", f, unix.Lsetxattr(f, "security.capability", []byte{1, 0, 0, 2, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0}, 0))
	h.report("removexattr", f, unix.Lremovexattr(f, "user.hostile"))
	h.report("link-into-inbox", f, os.Link(f, filepath.Join(h.inbox, fmt.Sprintf("hardlink-%d", i))))
	h.report("link-beside", f, os.Link(f, f+".hardlink"))
	// A symlink in the inbox pointing into the vault, written through.
	sl := filepath.Join(h.inbox, fmt.Sprintf("symlink-%d", i))
	if err := os.Symlink(f, sl); err != nil {
		h.report("symlink-write-through", f, fmt.Errorf("symlink %s: %w", sl, err))
	} else {
		h.openWriteAs("symlink-write-through", sl, f, os.O_WRONLY|os.O_APPEND)
	}
	// An O_PATH fd reopened for writing through /proc/self/fd.
	if fd, err := unix.Open(f, unix.O_PATH|unix.O_CLOEXEC, 0); err != nil {
		h.report("opath-reopen-write", f, fmt.Errorf("O_PATH: %w", err))
	} else {
		h.openWriteAs("opath-reopen-write", "/proc/self/fd/"+strconv.Itoa(fd), f, os.O_WRONLY|os.O_APPEND)
		unix.Close(fd)
	}
	// A read-only fd mapped shared and writable.
	if fd, err := unix.Open(f, unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
		h.report("mmap-shared-write", f, fmt.Errorf("open: %w", err))
	} else {
		m, err := unix.Mmap(fd, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err == nil {
			unix.Munmap(m)
		}
		h.report("mmap-shared-write", f, err)
		unix.Close(fd)
	}
	// openat through a directory fd of the parent.
	if dfd, err := unix.Open(filepath.Dir(f), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
		h.report("dirfd-openat-write", f, fmt.Errorf("open dir: %w", err))
	} else {
		fd, err := unix.Openat(dfd, filepath.Base(f), unix.O_WRONLY|unix.O_APPEND|unix.O_CLOEXEC, 0)
		if err == nil {
			_, err = unix.Write(fd, payload)
			unix.Close(fd)
		}
		h.report("dirfd-openat-write", f, err)
		unix.Close(dfd)
	}
	// Destructive attempts last, so the others still find their target.
	h.report("rename-within", f, os.Rename(f, f+".moved"))
	h.report("rename-out-to-inbox", f, os.Rename(f, filepath.Join(h.inbox, fmt.Sprintf("stolen-%d", i))))
	if src, err := h.inboxFile(fmt.Sprintf("replacement-%d", i)); err != nil {
		h.report("rename-over-from-inbox", f, fmt.Errorf("prepare %s: %w", src, err))
	} else {
		h.report("rename-over-from-inbox", f, os.Rename(src, f))
	}
	h.report("unlink", f, unix.Unlink(f))
}

func utimensatNow(dirfd int, path string) error {
	p, err := unix.BytePtrFromString(path)
	if err != nil {
		return err
	}
	_, _, e := unix.Syscall6(unix.SYS_UTIMENSAT, uintptr(dirfd), uintptr(unsafe.Pointer(p)), 0, 0, 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

func (h *H) dirOps(d string, i int) {
	h.openWrite("create", filepath.Join(d, "hostile-new.md"), os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	h.report("mkdir", filepath.Join(d, "hostile-dir"), unix.Mkdir(filepath.Join(d, "hostile-dir"), 0o755))
	h.report("mknod-fifo", filepath.Join(d, "hostile-fifo"), unix.Mknod(filepath.Join(d, "hostile-fifo"), unix.S_IFIFO|0o666, 0))
	h.report("mknod-chr", filepath.Join(d, "hostile-null"), unix.Mknod(filepath.Join(d, "hostile-null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))))
	h.report("symlink-create", filepath.Join(d, "hostile-link"), unix.Symlink("/etc/passwd", filepath.Join(d, "hostile-link")))
	h.report("chmod", d, unix.Chmod(d, 0o777))
	h.report("chown", d, unix.Lchown(d, os.Getuid(), os.Getgid()))
	h.report("utimes", d, os.Chtimes(d, fixedTime, fixedTime))
	h.report("touch-now", d, utimensatNow(unix.AT_FDCWD, d))
	h.report("setxattr-user", d, unix.Lsetxattr(d, "user.hostile", []byte("x"), 0))
	h.report("setxattr-trusted", d, unix.Lsetxattr(d, "trusted.hostile", []byte("x"), 0))
	if src, err := h.inboxFile(fmt.Sprintf("into-%d", i)); err != nil {
		h.report("rename-into-from-inbox", d, fmt.Errorf("prepare %s: %w", src, err))
	} else {
		h.report("rename-into-from-inbox", filepath.Join(d, "from-inbox.md"), os.Rename(src, filepath.Join(d, "from-inbox.md")))
	}
	if src, err := h.inboxFile(fmt.Sprintf("linksrc-%d", i)); err != nil {
		h.report("link-from-inbox", d, fmt.Errorf("prepare %s: %w", src, err))
	} else {
		h.report("link-from-inbox", filepath.Join(d, "hardlink-from-inbox.md"), os.Link(src, filepath.Join(d, "hardlink-from-inbox.md")))
	}
	// A symlink in the inbox to a vault directory, created through.
	sl := filepath.Join(h.inbox, fmt.Sprintf("dirlink-%d", i))
	if err := os.Symlink(d, sl); err != nil {
		h.report("symlink-dir-create-through", d, fmt.Errorf("symlink %s: %w", sl, err))
	} else {
		h.openWriteAs("symlink-dir-create-through", filepath.Join(sl, "via-symlink.md"), filepath.Join(d, "via-symlink.md"), os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	}
	// openat and fchdir through a directory fd opened on the vault.
	dfd, err := unix.Open(d, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		h.report("dirfd-openat-create", d, fmt.Errorf("open dir: %w", err))
		h.report("fchdir-create", d, fmt.Errorf("open dir: %w", err))
	} else {
		h.dirfdOps(d, dfd)
		unix.Close(dfd)
	}
	// Destructive attempts last.
	h.report("rmdir", d, unix.Rmdir(d))
	h.report("rename-within", d, os.Rename(d, d+".moved"))
	h.report("rename-out-to-inbox", d, os.Rename(d, filepath.Join(h.inbox, fmt.Sprintf("stolen-dir-%d", i))))
}

// dirfdOps: openat, renameat and fchdir through a directory fd on d.
func (h *H) dirfdOps(d string, dfd int) {
	fd, err := unix.Openat(dfd, "hostile-at.md", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
	if err == nil {
		unix.Close(fd)
	}
	h.report("dirfd-openat-create", filepath.Join(d, "hostile-at.md"), err)
	if ents, err := os.ReadDir(d); err == nil && len(ents) > 0 {
		n := ents[0].Name()
		h.report("renameat-through-dirfd", filepath.Join(d, n), unix.Renameat(dfd, n, dfd, n+".moved"))
	}
	// fchdir affects the whole process (Go threads share fs): do it on a
	// locked thread and come back to the workdir before anything else.
	runtime.LockOSThread()
	err = unix.Fchdir(dfd)
	if err == nil {
		var fd int
		fd, err = unix.Open("hostile-cwd.md", unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
		if err == nil {
			unix.Close(fd)
		}
	} else {
		err = fmt.Errorf("fchdir: %w", err)
	}
	if cerr := unix.Chdir(h.workdir); cerr != nil {
		unix.Chdir("/")
	}
	runtime.UnlockOSThread()
	h.report("fchdir-create", filepath.Join(d, "hostile-cwd.md"), err)
}

// otherSessions: the inbox root must show only the own session, and another
// session's drafts must be out of reach.
func (h *H) otherSessions() {
	root := filepath.Join(h.vault, "90-inbox")
	ents, err := os.ReadDir(root)
	var names []string
	bad := false
	for _, e := range ents {
		names = append(names, e.Name())
		if e.Name() != h.session {
			bad = true
		}
	}
	h.check("list-inbox-root", root, strings.Join(names, " "), bad, err)
	if h.other == "" {
		return
	}
	_, err = os.Stat(h.other)
	h.report("stat-other-session", h.other, err)
	_, err = os.ReadFile(filepath.Join(h.other, h.draft))
	h.report("read-other-draft", filepath.Join(h.other, h.draft), err)
	_, err = os.ReadDir(h.other)
	h.report("list-other-session", h.other, err)
	_, err = os.ReadFile(filepath.Join("/proc/1/root", h.other, h.draft))
	h.report("read-other-draft-proc1-root", filepath.Join("/proc/1/root", h.other, h.draft), err)
}

// mountFamily calls the mount syscalls directly against the vault.
func (h *H) mountFamily() {
	v := h.vault
	h.report("mount-tmpfs-over-vault", v, unix.Mount("tmpfs", v, "tmpfs", 0, ""))
	h.report("mount-bind-inbox-over-dir", filepath.Dir(h.note), unix.Mount(h.inbox, filepath.Dir(h.note), "", unix.MS_BIND, ""))
	h.report("remount-bind-rw", v, unix.Mount("", v, "", unix.MS_REMOUNT|unix.MS_BIND, ""))
	h.report("remount-rw", v, unix.Mount("", v, "", unix.MS_REMOUNT, ""))
	h.report("make-rprivate", "/", unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""))
	h.report("umount-vault", v, unix.Unmount(v, unix.MNT_DETACH))
	h.report("umount-inbox-mask", filepath.Join(v, "90-inbox"), unix.Unmount(filepath.Join(v, "90-inbox"), unix.MNT_DETACH))
	h.report("umount-secret-mask", filepath.Join(h.home, ".ssh"), unix.Unmount(filepath.Join(h.home, ".ssh"), unix.MNT_DETACH))
	h.report("mount_setattr-clear-rdonly", v, unix.MountSetattr(unix.AT_FDCWD, v, unix.AT_RECURSIVE, &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}))
	fd, err := unix.OpenTree(unix.AT_FDCWD, v, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
	h.report("open_tree-clone", v, err)
	if err == nil {
		h.report("mount_setattr-clone-rw", v, unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH|unix.AT_RECURSIVE, &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}))
		os.MkdirAll("/tmp/hostile-clone", 0o755)
		h.report("move_mount-clone", "/tmp/hostile-clone", unix.MoveMount(fd, "", unix.AT_FDCWD, "/tmp/hostile-clone", unix.MOVE_MOUNT_F_EMPTY_PATH))
		unix.Close(fd)
	}
	os.MkdirAll("/tmp/hostile-moved", 0o755)
	h.report("move_mount-vault", v, unix.MoveMount(unix.AT_FDCWD, v, unix.AT_FDCWD, "/tmp/hostile-moved", 0))
	fd, err = unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC)
	h.report("fsopen", "tmpfs", err)
	if err == nil {
		unix.Close(fd)
	}
	fd, err = unix.Fspick(unix.AT_FDCWD, v, unix.FSPICK_CLOEXEC)
	h.report("fspick", v, err)
	if err == nil {
		unix.Close(fd)
	}
	os.MkdirAll("/tmp/hostile-old", 0o755)
	h.report("pivot_root", "/tmp", unix.PivotRoot("/tmp", "/tmp/hostile-old"))
	h.report("chroot", "/tmp", unix.Chroot("/tmp"))
}

// namespaces tries to get a user namespace with full capabilities in which
// the mount tricks would be allowed. If one of them works, the child runs
// nested-escape and reports its own lines.
func (h *H) namespaces() {
	self, err := os.Executable()
	if err != nil {
		self = "/proc/self/exe"
	}
	args := []string{self, "nested-escape", "--vault", h.vault, "--inbox", h.inbox, "--session", h.session, "--workdir", h.workdir, "--note", strings.TrimPrefix(h.note, h.vault+"/")}
	outFd := uintptr(1)
	if h.outFile != nil {
		outFd = h.outFile.Fd()
	}
	files := []uintptr{0, outFd, 2}
	run := func(attempt string, sys *syscall.SysProcAttr) {
		pid, err := syscall.ForkExec(self, args, &syscall.ProcAttr{Dir: h.workdir, Env: os.Environ(), Files: files, Sys: sys})
		if err == nil {
			var ws syscall.WaitStatus
			syscall.Wait4(pid, &ws, 0, nil)
		}
		h.report(attempt, "CLONE_NEWUSER|CLONE_NEWNS", err)
	}
	// clone(2) with the namespace flags (syscall.ForkExec uses clone, not
	// clone3, when no pidfd or cgroup fd is requested).
	run("clone-newuser", &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	})
	// unshare(2) in the single-threaded child after fork.
	run("unshare-newuser", &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS})
	pid, err := syscall.ForkExec(self, args, &syscall.ProcAttr{Dir: h.workdir, Env: os.Environ(), Files: files, Sys: &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}})
	if err == nil {
		syscall.Wait4(pid, nil, 0, nil)
	}
	h.report("unshare-newns", "CLONE_NEWNS", err)
	// clone3 takes its flags in memory that a seccomp filter cannot read,
	// so it must be refused outright (ENOSYS lets libc fall back to clone).
	// A zero size is invalid: a reachable clone3 answers EINVAL and creates
	// nothing.
	_, _, e := unix.RawSyscall(unix.SYS_CLONE3, 0, 0, 0)
	r := Result{Attempt: "clone3-reachable", Target: "clone3(NULL, 0)", Errno: errName(e), Err: e.Error()}
	r.OK = e != unix.ENOSYS && e != unix.EPERM
	h.emit(r)
	for _, ns := range []struct {
		name string
		flag int
	}{{"mnt", unix.CLONE_NEWNS}, {"user", unix.CLONE_NEWUSER}, {"pid", unix.CLONE_NEWPID}} {
		p := "/proc/1/ns/" + ns.name
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			h.report("setns", p, fmt.Errorf("open: %w", err))
			continue
		}
		runtime.LockOSThread()
		err = unix.Setns(fd, ns.flag)
		runtime.UnlockOSThread()
		unix.Close(fd)
		h.report("setns", p, err)
	}
}

// nestedEscape runs in a child that got a new user and mount namespace (it
// should never run: the sandbox must refuse those namespaces). With full
// capabilities in the new namespace it tries to make the vault writable.
func (h *H) nestedEscape() {
	h.emit(Result{Attempt: "nested-started", Target: h.vault, OK: true, Saw: fmt.Sprintf("uid=%d", os.Getuid())})
	dfd, _ := unix.Open(filepath.Dir(h.note), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	write := func(attempt string) {
		h.openWrite("nested-write-"+attempt, h.note, os.O_WRONLY|os.O_APPEND)
	}
	h.report("nested-make-rprivate", "/", unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""))
	h.report("nested-remount-bind-rw", h.vault, unix.Mount("", h.vault, "", unix.MS_REMOUNT|unix.MS_BIND, ""))
	write("after-remount")
	h.report("nested-mount_setattr-rw", h.vault, unix.MountSetattr(unix.AT_FDCWD, h.vault, unix.AT_RECURSIVE, &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}))
	write("after-mount_setattr")
	h.report("nested-umount-vault", h.vault, unix.Unmount(h.vault, unix.MNT_DETACH))
	write("after-umount")
	// pivot_root into a fresh tmpfs, detach the old root, then use the
	// directory fd opened before.
	nr := "/tmp/hostile-newroot"
	os.MkdirAll(nr, 0o755)
	h.report("nested-mount-newroot", nr, unix.Mount("tmpfs", nr, "tmpfs", 0, ""))
	os.MkdirAll(nr+"/old", 0o755)
	h.report("nested-pivot_root", nr, unix.PivotRoot(nr, nr+"/old"))
	h.report("nested-umount-oldroot", "/old", unix.Unmount("/old", unix.MNT_DETACH))
	if dfd > 0 {
		fd, err := unix.Openat(dfd, filepath.Base(h.note), unix.O_WRONLY|unix.O_APPEND|unix.O_CLOEXEC, 0)
		if err == nil {
			_, err = unix.Write(fd, payload)
			unix.Close(fd)
		}
		h.report("nested-write-dirfd-after-pivot", h.note, err)
		h.report("nested-renameat-dirfd-after-pivot", h.note, unix.Renameat(dfd, filepath.Base(h.note), dfd, filepath.Base(h.note)+".moved"))
	}
}

// processes: other processes of the sandbox (pid 1 is fedmem-run's init)
// must be out of reach: no ptrace, no memory access, no signals, and no
// writable handle on the init's binary (CVE-2019-5736).
func (h *H) processes() {
	targets := []int{1}
	if pp := os.Getppid(); pp > 1 {
		targets = append(targets, pp)
	}
	for _, pid := range targets {
		t := strconv.Itoa(pid)
		if pid == os.Getpid() {
			continue
		}
		runtime.LockOSThread()
		err := unix.PtraceAttach(pid)
		if err == nil {
			unix.PtraceDetach(pid)
		}
		runtime.UnlockOSThread()
		h.report("ptrace-attach", "pid "+t, err)
		local := make([]byte, 8)
		liov := []unix.Iovec{{Base: &local[0], Len: 8}}
		riov := []unix.RemoteIovec{{Base: 0x10000, Len: 8}}
		_, err = unix.ProcessVMReadv(pid, liov, riov, 0)
		h.report("process_vm_readv", "pid "+t, err)
		_, err = unix.ProcessVMWritev(pid, liov, riov, 0)
		h.report("process_vm_writev", "pid "+t, err)
		f, err := os.OpenFile("/proc/"+t+"/mem", os.O_RDWR, 0)
		if err == nil {
			f.Close()
		}
		h.report("proc-mem-open-rdwr", "/proc/"+t+"/mem", err)
		// CVE-2019-5736: overwrite the runtime's binary through
		// /proc/<pid>/exe. Even ETXTBSY is a failure of the sandbox: it
		// means the binary's inode was reachable through a writable mount.
		f, err = os.OpenFile("/proc/"+t+"/exe", os.O_WRONLY, 0)
		if err == nil {
			f.Close()
		}
		h.report("proc-exe-open-write", "/proc/"+t+"/exe", err)
		if fd, err := unix.Open("/proc/"+t+"/exe", unix.O_PATH|unix.O_CLOEXEC, 0); err != nil {
			h.report("proc-exe-opath-reopen-write", "/proc/"+t+"/exe", fmt.Errorf("O_PATH: %w", err))
		} else {
			f, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(fd), os.O_WRONLY, 0)
			if err == nil {
				f.Close()
			}
			h.report("proc-exe-opath-reopen-write", "/proc/"+t+"/exe", err)
			unix.Close(fd)
		}
		h.openWrite("proc-root-write-note", "/proc/"+t+"/root"+h.note, os.O_WRONLY|os.O_APPEND)
		// Signal 0 checks permission without delivering anything.
		h.report("kill", "pid "+t+" signal 0", unix.Kill(pid, 0))
	}
	h.openWrite("proc-self-root-write-note", "/proc/self/root"+h.note, os.O_WRONLY|os.O_APPEND)
	// open_by_handle_at (the "shocker" escape): a handle from
	// name_to_handle_at, or a forged one for the filesystem root.
	handle, _, err := unix.NameToHandleAt(unix.AT_FDCWD, h.note, 0)
	h.emit(Result{Attempt: "info-name_to_handle_at", Target: h.note, OK: err == nil, Positive: true, Err: errString(err)})
	if err != nil {
		b := make([]byte, 8)
		b[0] = 2 // inode 2, generation 0: the root of ext4/xfs
		handle = unix.NewFileHandle(1, b)
	}
	mfd, err := unix.Open(h.vault, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		h.report("open_by_handle_at", h.note, fmt.Errorf("open mount fd: %w", err))
		return
	}
	fd, err := unix.OpenByHandleAt(mfd, handle, unix.O_RDWR|unix.O_CLOEXEC)
	if err == nil {
		unix.Close(fd)
	}
	h.report("open_by_handle_at", h.note, err)
	unix.Close(mfd)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// kernelSurface: syscalls the filter must refuse outright.
func (h *H) kernelSurface() {
	_, err := unix.KeyctlJoinSessionKeyring("hostile")
	h.report("keyctl-join-session", "hostile", err)
	_, err = unix.AddKey("user", "hostile", []byte("x"), unix.KEY_SPEC_PROCESS_KEYRING)
	h.report("add_key", "user:hostile", err)
	// bpf(BPF_MAP_CREATE) of a one-entry array.
	attr := [32]uint32{2, 4, 4, 1}
	fd, _, e := unix.Syscall(unix.SYS_BPF, 0, uintptr(unsafe.Pointer(&attr[0])), unsafe.Sizeof(attr))
	if e == 0 {
		unix.Close(int(fd))
	}
	h.report("bpf", "BPF_MAP_CREATE", errOrNil(e))
	var params [120]byte
	fd, _, e = unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0)
	if e == 0 {
		unix.Close(int(fd))
	}
	h.report("io_uring_setup", "1 entry", errOrNil(e))
	pa := unix.PerfEventAttr{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_CPU_CLOCK}
	pa.Size = uint32(unsafe.Sizeof(pa))
	pfd, err := unix.PerfEventOpen(&pa, 0, -1, -1, unix.PERF_FLAG_FD_CLOEXEC)
	if err == nil {
		unix.Close(pfd)
	}
	h.report("perf_event_open", "self cpu-clock", err)
	fd, _, e = unix.Syscall(unix.SYS_USERFAULTFD, unix.O_CLOEXEC, 0, 0)
	if e == 0 {
		unix.Close(int(fd))
	}
	h.report("userfaultfd", "O_CLOEXEC", errOrNil(e))
	_, _, e = unix.Syscall(unix.SYS_INIT_MODULE, 0, 0, 0)
	h.report("init_module", "NULL", errOrNil(e))
	// Invalid flags: even a capable caller gets EINVAL, never an unload.
	_, _, e = unix.Syscall6(unix.SYS_KEXEC_LOAD, 0, 0, 0, 0xfff0000, 0, 0)
	h.report("kexec_load", "invalid flags", errOrNil(e))
}

func errOrNil(e syscall.Errno) error {
	if e != 0 {
		return e
	}
	return nil
}

// tiocsti pushes a command into the terminal's input queue (TIOCSTI) and
// tries TIOCLINUX, once with the plain 32-bit command and once with high
// bits set (CVE-2019-10063: a filter comparing 64 bits missed it, the
// kernel only looks at 32). withMarker injects a full command line, so a
// test can see whether it reached an outer shell.
func (h *H) tiocsti(withMarker bool) {
	tty := "stdin(not a tty)"
	if _, err := unix.IoctlGetTermios(0, unix.TCGETS); err == nil {
		tty = "stdin(tty)"
	}
	inject := "#"
	if withMarker {
		inject = "echo TIOCSTI-ESCAPED-$((6*7))\n"
	}
	for _, v := range []struct {
		name string
		cmd  uintptr
	}{{"tiocsti", unix.TIOCSTI}, {"tiocsti-64bit", unix.TIOCSTI | 1<<32}} {
		var e syscall.Errno
		for i := 0; i < len(inject); i++ {
			c := inject[i]
			_, _, e = unix.Syscall(unix.SYS_IOCTL, 0, v.cmd, uintptr(unsafe.Pointer(&c)))
			if e != 0 {
				break
			}
		}
		h.report(v.name, tty, errOrNil(e))
	}
	// TIOCLINUX subcode 2 (TIOCL_SETSEL) then 3 (TIOCL_PASTESEL).
	for _, v := range []struct {
		name string
		cmd  uintptr
	}{{"tioclinux", unix.TIOCLINUX}, {"tioclinux-64bit", unix.TIOCLINUX | 1<<32}} {
		arg := [1]byte{3}
		_, _, e := unix.Syscall(unix.SYS_IOCTL, 0, v.cmd, uintptr(unsafe.Pointer(&arg[0])))
		h.report(v.name, tty, errOrNil(e))
	}
}

// hostPaths: the rest of the host is read-only. Only opens are attempted
// (no bytes written), so a broken sandbox does not damage the machine.
func (h *H) hostPaths() {
	openOnly := func(attempt, p string, flags int) {
		f, err := os.OpenFile(p, flags, 0o644)
		if err == nil {
			f.Close()
			if flags&os.O_EXCL != 0 {
				os.Remove(p)
			}
		}
		h.report(attempt, p, err)
	}
	openOnly("etc-passwd-open-write", "/etc/passwd", os.O_WRONLY|os.O_APPEND)
	openOnly("etc-create", "/etc/fedmem-hostile", os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if h.home != "" {
		openOnly("bashrc-open-write", filepath.Join(h.home, ".bashrc"), os.O_WRONLY|os.O_APPEND)
		openOnly("home-create", filepath.Join(h.home, ".hostile-dropped"), os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	}
	openOnly("usr-bin-create", "/usr/bin/hostile-dropped", os.O_WRONLY|os.O_CREATE|os.O_EXCL)
}

// secrets: masked paths must be unreadable or empty.
func (h *H) secrets() {
	if h.home == "" {
		h.check("read-secret", "$HOME", "", true, fmt.Errorf("HOME is not set"))
		return
	}
	files := []string{".ssh/id_ed25519", ".ssh/id_rsa", ".aws/credentials", ".netrc", ".kube/config", ".docker/config.json", ".config/gcloud/credentials.db", ".gnupg/private-keys-v1.d/key.key"}
	if ents, err := os.ReadDir(filepath.Join(h.home, ".ssh")); err == nil {
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "id_") {
				files = append(files, ".ssh/"+e.Name())
			}
		}
	}
	for _, rel := range files {
		p := filepath.Join(h.home, rel)
		b, err := os.ReadFile(p)
		saw := ""
		if err == nil {
			saw = fmt.Sprintf("%d bytes", len(b))
			if len(b) > 0 {
				saw += ": " + string(b[:min(len(b), 64)])
			}
		}
		h.check("read-secret", p, saw, err == nil && len(b) > 0, err)
	}
	for _, rel := range []string{".ssh", ".aws", ".gnupg", ".kube", ".docker", ".config/gcloud"} {
		p := filepath.Join(h.home, rel)
		ents, err := os.ReadDir(p)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		h.check("list-secret-dir", p, strings.Join(names, " "), len(names) > 0, err)
	}
}

// sockets: abstract unix sockets live in the network namespace, not the
// filesystem, so read-only mounts do not stop a connect (X11 and D-Bus
// listen there; through them an agent types into the user's terminal).
func (h *H) sockets() {
	if h.abstract == "" {
		return
	}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		h.report("connect-abstract-socket", "@"+h.abstract, fmt.Errorf("socket: %w", err))
		return
	}
	defer unix.Close(fd)
	h.report("connect-abstract-socket", "@"+h.abstract, unix.Connect(fd, &unix.SockaddrUnix{Name: "@" + h.abstract}))
}
