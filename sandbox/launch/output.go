package launch

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/vault"
)

// openOutput opens a file fedmem-run writes for the caller (--report,
// --events) before the agent starts, so that nothing the agent does later
// redirects it: the directory is opened first, the file is created in it
// O_EXCL|O_NOFOLLOW, or — when it exists — opened O_NOFOLLOW|O_NONBLOCK and
// accepted only as a regular file with one link, owned by the caller. The
// file is then written through the returned descriptor only (no temporary
// file beside it, no rename, no reopen by path): a symbolic link, FIFO,
// device or hard link planted at the path by an earlier agent in its
// workdir is refused, never followed (guarantee 5: fedmem never acts on a
// path the agent controls).
//
// agentWritable are the host paths an agent may write (the plan's writable
// paths: an earlier session with the same flags had them too). Below one
// of them no directory of the path is followed if it is a link either —
// an agent could have replaced `out/` by a link to /etc — while links
// above them (a user's ~/proj → /work/proj) are followed as usual.
func openOutput(flag, path string, appendMode bool, agentWritable []string) (*os.File, error) {
	f, dfd, err := openOutputDir(flag, path, appendMode, agentWritable)
	if err != nil {
		return nil, err
	}
	unix.Close(dfd)
	return f, nil
}

// openOutputDir is openOutput that also returns the descriptor of the
// file's folder (the caller closes it).
func openOutputDir(flag, path string, appendMode bool, agentWritable []string) (f *os.File, dfd int, err error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, -1, fmt.Errorf("%s %s: %w", flag, path, err)
	}
	dir, base := filepath.Split(abs)
	if base == "" || base == "." || base == ".." {
		return nil, -1, fmt.Errorf("%s %s: not a file name", flag, path)
	}
	dfd, err = openDirGuarded(filepath.Clean(dir), agentWritable)
	if err != nil {
		return nil, -1, fmt.Errorf("%s %s: %w", flag, path, err)
	}
	f, err = openInDir(flag, path, abs, dfd, base, appendMode)
	if err != nil {
		unix.Close(dfd)
		return nil, -1, err
	}
	return f, dfd, nil
}

func openInDir(flag, path, abs string, dfd int, base string, appendMode bool) (*os.File, error) {
	mode := unix.O_WRONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NOCTTY
	if appendMode {
		mode |= unix.O_APPEND
	}
	fd, err := unix.Openat(dfd, base, mode|unix.O_CREAT|unix.O_EXCL, 0o644)
	if errors.Is(err, unix.EEXIST) {
		fd, err = unix.Openat(dfd, base, mode|unix.O_NONBLOCK, 0)
		if errors.Is(err, unix.ELOOP) {
			return nil, fmt.Errorf("%s %s: is a symbolic link: refused (fedmem-run never follows a link at its output paths; remove it)", flag, path)
		}
		if errors.Is(err, unix.ENXIO) {
			return nil, fmt.Errorf("%s %s: not a regular file (a FIFO or socket): refused (remove it, or name a new file)", flag, path)
		}
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", flag, path, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("%s %s: %w", flag, path, err)
		}
		why := ""
		switch {
		case st.Mode&unix.S_IFMT != unix.S_IFREG:
			why = "not a regular file"
		case int(st.Uid) != os.Geteuid():
			why = fmt.Sprintf("owned by uid %d, not by fedmem-run's caller (uid %d)", st.Uid, os.Geteuid())
		case st.Nlink != 1:
			why = fmt.Sprintf("has %d hard links", st.Nlink)
		}
		if why != "" {
			unix.Close(fd)
			return nil, fmt.Errorf("%s %s: %s: refused (remove it, or name a new file)", flag, path, why)
		}
		if err := unix.SetNonblock(fd, false); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("%s %s: %w", flag, path, err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, path, err)
	}
	return os.NewFile(uintptr(fd), abs), nil
}

// reportOut is the --report file: opened at the start (openOutputDir),
// written once at the end (commit).
type reportOut struct {
	f    *os.File // the file at the path when the session started
	dfd  int      // its folder, as resolved at the start
	path string   // the path as the caller gave it
	abs  string
}

// ErrReportPath is a report written but not at the caller's path: the
// folder or the file there was replaced during the run.
var ErrReportPath = errors.New("the report path does not hold fedmem-run's report")

func openReport(path string, agentWritable []string) (*reportOut, error) {
	f, dfd, err := openOutputDir("--report", path, false, agentWritable)
	if err != nil {
		return nil, err
	}
	return &reportOut{f: f, dfd: dfd, path: path, abs: f.Name()}, nil
}

func (r *reportOut) Close() {
	r.f.Close()
	unix.Close(r.dfd)
}

// commit makes the report's path hold b, after the agent and its
// processes are gone. The agent may have renamed a file of its own over
// the path during the run (it can write its workdir): writing through the
// descriptor opened at the start would then fill an unlinked inode while
// the path holds the forgery. So b goes to a new file made O_EXCL in the
// folder opened at the start (never through a path), renamed over the
// path's name, and the path is then checked to name that very file (dev,
// inode) in that very folder. If the folder itself was replaced (the
// path now leads elsewhere), the error wraps ErrReportPath: the caller
// must not read the path as fedmem-run's report.
func (r *reportOut) commit(b []byte) error {
	base := filepath.Base(r.abs)
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return err
	}
	tmp := "." + base + ".fedmem-" + hex.EncodeToString(rnd[:])
	var st unix.Stat_t
	fd, err := unix.Openat(r.dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	switch {
	case errors.Is(err, unix.EACCES) || errors.Is(err, unix.EROFS):
		// A folder the caller may not create files in (only the file
		// was writable): write through the descriptor; the check below
		// still says if the path no longer names it.
		if err := rewrite(r.f, b); err != nil {
			return err
		}
		if err := unix.Fstat(int(r.f.Fd()), &st); err != nil {
			return err
		}
	case err != nil:
		return err
	default:
		tf := os.NewFile(uintptr(fd), tmp)
		_, werr := tf.Write(b)
		if werr == nil {
			werr = tf.Sync()
		}
		if werr == nil {
			werr = unix.Fstat(fd, &st)
		}
		tf.Close()
		if werr == nil {
			werr = unix.Renameat(r.dfd, tmp, r.dfd, base)
		}
		if werr != nil {
			unix.Unlinkat(r.dfd, tmp, 0)
			return fmt.Errorf("%w: %s: %v", ErrReportPath, r.path, werr)
		}
	}
	// The path must lead to the folder opened at the start, and name the
	// file just written there.
	var ds, ps, fs unix.Stat_t
	if err := unix.Fstat(r.dfd, &ds); err != nil {
		return err
	}
	if err := unix.Stat(filepath.Dir(r.abs), &ps); err != nil || ps.Dev != ds.Dev || ps.Ino != ds.Ino {
		return fmt.Errorf("%w: %s: its folder %s was replaced during the run (the report was written to the folder fedmem-run opened at the start, not to what the path names now; rule: the report at the path is fedmem-run's own, never a file the agent put there)", ErrReportPath, r.path, filepath.Dir(r.abs))
	}
	if err := unix.Lstat(r.abs, &fs); err != nil || fs.Dev != st.Dev || fs.Ino != st.Ino {
		return fmt.Errorf("%w: %s was replaced after fedmem-run wrote its report (rule: the report at the path is fedmem-run's own, never a file the agent put there)", ErrReportPath, r.path)
	}
	return nil
}

// rewrite replaces the content of f (opened by openOutput) with b.
func rewrite(f *os.File, b []byte) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		return err
	}
	return nil
}

// maxLinks bounds the symbolic links one output path may go through
// (the kernel's MAXSYMLINKS).
const maxLinks = 40

// openDirGuarded opens dir one component at a time from /, as the kernel
// would, but resolving each symbolic link itself (O_PATH|O_NOFOLLOW,
// readlinkat on the link it checked), so that the link it follows is the
// one it checked. Run as root, it follows no link at all: a root caller's
// workdir is bound idmapped (agent → root), so a link an agent of an
// earlier session planted in its workdir is root's on disk and cannot be
// told from one the administrator made. Otherwise a link is followed only
// when it is owned by root or by fedmem-run's caller (as
// fs.protected_symlinks, for every folder, not only sticky ones): a link
// made by an agent of another uid is refused, whatever this session's
// plan says.
// Below a path of agentWritable (by its real path, read back from the
// descriptor) no link is followed at all.
func openDirGuarded(dir string, agentWritable []string) (int, error) {
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	real := "/"
	comps := strings.Split(strings.Trim(dir, "/"), "/")
	links := 0
	for len(comps) > 0 {
		comp := comps[0]
		comps = comps[1:]
		if comp == "" || comp == "." {
			continue
		}
		next := filepath.Join(real, comp)
		nfd, err := unix.Openat(fd, comp, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("open directory %s: %w", next, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(nfd, &st); err != nil {
			unix.Close(nfd)
			unix.Close(fd)
			return -1, fmt.Errorf("open directory %s: %w", next, err)
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			why := ""
			switch {
			case guardedBy(real, agentWritable) != "":
				why = fmt.Sprintf("is a symbolic link in a path the agent can write (%s): refused, never followed", guardedBy(real, agentWritable))
			case os.Geteuid() == 0:
				why = "is a symbolic link: refused, never followed (rule: fedmem-run run as root follows no link on its output paths: an agent's files in a workdir bound idmapped are root's on disk, so a link an earlier session planted cannot be told from yours; give the resolved path, e.g. $(realpath DIR)/FILE)"
			case st.Uid != 0 && int(st.Uid) != os.Geteuid() && int(st.Uid) != os.Getuid():
				why = fmt.Sprintf("is a symbolic link owned by uid %d, not by root or fedmem-run's caller (uid %d): refused, never followed (rule: fedmem-run follows a link on its output paths only if root or the caller made it; an agent of an earlier session could have)", st.Uid, os.Geteuid())
			case links >= maxLinks:
				why = "too many levels of symbolic links"
			}
			var target string
			if why == "" {
				buf := make([]byte, unix.PathMax)
				n, err := unix.Readlinkat(nfd, "", buf)
				if err != nil {
					why = fmt.Sprintf("readlink: %v", err)
				} else {
					target = string(buf[:n])
				}
			}
			unix.Close(nfd)
			if why != "" {
				unix.Close(fd)
				return -1, fmt.Errorf("directory %s %s", next, why)
			}
			links++
			if filepath.IsAbs(target) {
				unix.Close(fd)
				if fd, err = unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err != nil {
					return -1, err
				}
				real = "/"
			}
			comps = append(strings.Split(target, "/"), comps...)
			continue
		}
		unix.Close(fd)
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			unix.Close(nfd)
			return -1, fmt.Errorf("open directory %s: %w", next, unix.ENOTDIR)
		}
		fd = nfd
		if r, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd)); err == nil && filepath.IsAbs(r) {
			real = r
		} else {
			real = filepath.Clean(next)
		}
	}
	// A plain descriptor of the folder reached (O_PATH served the walk).
	dfd, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	unix.Close(fd)
	if err != nil {
		return -1, fmt.Errorf("open directory %s: %w", real, err)
	}
	return dfd, nil
}

// guardedBy returns the path of agentWritable that real lies in, or "".
func guardedBy(real string, agentWritable []string) string {
	for _, w := range agentWritable {
		if vault.Within(real, w) {
			return w
		}
	}
	return ""
}
