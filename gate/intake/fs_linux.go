//go:build linux

package intake

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/vault"
)

// ErrBusy is returned when another gate holds the state directory.
var ErrBusy = errors.New("gate busy")

// resolveStrict never follows a symbolic link (not even in a parent: the
// agent owns its session directory and may plant one), never leaves the
// directory it starts from, and refuses /proc magic links.
const resolveStrict = unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS

// OpenAt opens name under dirfd with openat2, never following a link
// (resolveStrict), without a controlling terminal or an inherited descriptor.
func OpenAt(dirfd int, name string, flags uint64) (int, error) {
	for {
		fd, err := unix.Openat2(dirfd, name, &unix.OpenHow{Flags: flags | unix.O_CLOEXEC | unix.O_NOFOLLOW, Resolve: resolveStrict})
		if err == unix.EINTR || err == unix.EAGAIN && flags&unix.O_NONBLOCK == 0 {
			continue
		}
		return fd, err
	}
}

// OpenDir opens a directory with OpenAt under dirfd.
func OpenDir(dirfd int, name string) (int, error) {
	return OpenAt(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY)
}

// ListDir returns the names in the directory open at fd (fd stays open).
func ListDir(fd int) ([]string, error) {
	dup, err := unix.Dup(fd)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dup), "dir")
	defer f.Close()
	// The duplicate shares fd's position: a second listing (a pass's
	// intake lists the inbox again) would start at the end.
	if _, err := unix.Seek(dup, 0, io.SeekStart); err != nil {
		return nil, err
	}
	return f.Readdirnames(-1)
}

// Inbox holds an open descriptor on the vault's inbox folder.
type Inbox struct {
	fd int
}

// Open opens the inbox of the vault in vaultDir (not following a link).
func Open(vaultDir string) (*Inbox, error) {
	fd, err := unix.Open(vaultDir+"/"+vault.InboxDir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open inbox %s/%s: %w", vaultDir, vault.InboxDir, err)
	}
	return &Inbox{fd: fd}, nil
}

// FD is the inbox folder's descriptor (for OpenAt and OpenDir).
func (in *Inbox) FD() int { return in.fd }

// Close closes the inbox folder.
func (in *Inbox) Close() { unix.Close(in.fd) }

// Sessions lists session directories: valid ids only (dot names such as
// .sessions and .gitkeep are skipped).
func (in *Inbox) Sessions() ([]string, error) {
	names, err := ListDir(in.fd)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		if vault.ValidSessionID(n) {
			out = append(out, n)
		}
	}
	return out, nil
}

// SessionOwner returns the uid owning a session directory.
func (in *Inbox) SessionOwner(sess string) (int, error) {
	fd, err := OpenDir(in.fd, sess)
	if err != nil {
		return -1, err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return -1, err
	}
	return int(st.Uid), nil
}

// IgnoredName: dot names (receipts, editors' temp files) and *.tmp are
// drafts still being written; the agent renames them when done.
func IgnoredName(n string) bool {
	return strings.HasPrefix(n, ".") || strings.HasSuffix(n, ".tmp")
}

// FileKind names a file type for a message.
func FileKind(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return "FIFO"
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFCHR:
		return "character device"
	case unix.S_IFBLK:
		return "block device"
	case unix.S_IFSOCK:
		return "socket"
	case unix.S_IFLNK:
		return "symbolic link"
	}
	return "special file"
}

// ReceiptName is NAME.json, or a hash when that would be too long.
func ReceiptName(name string) string {
	if len(name)+len(".json") <= 255 {
		return name + ".json"
	}
	return fmt.Sprintf("sha256-%x.json", sha256.Sum256([]byte(name)))
}

// SameFS reports whether two paths are on one filesystem (rename works).
func SameFS(a, b string) (bool, error) {
	var sa, sb unix.Stat_t
	if err := unix.Stat(a, &sa); err != nil {
		return false, err
	}
	if err := unix.Stat(b, &sb); err != nil {
		return false, err
	}
	return sa.Dev == sb.Dev, nil
}

// OwnerOf is the uid owning path (not following a link).
func OwnerOf(path string) (int, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return -1, err
	}
	return int(st.Uid), nil
}

// WriteReceipt writes 90-inbox/<session>/.receipts/<name>.json without
// ever following a link the agent may have planted: the receipts folder is
// opened with openat2, the file is created O_EXCL under the fresh name tmp
// and renamed over the final one (rename replaces a planted symlink, never
// follows it).
func (in *Inbox) WriteReceipt(sess, name string, b []byte, tmp string) error {
	return in.WriteReceiptSpare(sess, name, b, tmp, nil, "")
}

// WriteReceiptSpare is WriteReceipt writing into spare (an empty file of
// the gate's at sparePath, on the vault's filesystem: gate/durable.Pool)
// and renaming it into place, instead of a new temporary file; spare nil,
// or a spare that cannot be used (removed), writes as WriteReceipt does.
// The spare gets the group a file made in .receipts would have.
func (in *Inbox) WriteReceiptSpare(sess, name string, b []byte, tmp string, spare *os.File, sparePath string) error {
	sfd, err := OpenDir(in.fd, sess)
	if err != nil {
		return fmt.Errorf("receipt: session %s: %w", sess, err)
	}
	defer unix.Close(sfd)
	if err := unix.Mkdirat(sfd, ".receipts", 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("receipt: mkdir: %w", err)
	}
	rfd, err := OpenDir(sfd, ".receipts")
	if err != nil {
		return fmt.Errorf("receipt: open %s/.receipts: %w", sess, err)
	}
	defer unix.Close(rfd)
	final := ReceiptName(name)
	if spare != nil {
		if receiptIntoSpare(rfd, final, b, spare, sparePath) == nil {
			return nil
		}
	}
	fd, err := unix.Openat(rfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return fmt.Errorf("receipt: create: %w", err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, werr := f.Write(b)
	if werr == nil {
		werr = f.Chmod(0o644)
	}
	cerr := f.Close()
	if werr != nil || cerr != nil {
		unix.Unlinkat(rfd, tmp, 0)
		return fmt.Errorf("receipt: write: %v %v", werr, cerr)
	}
	if err := unix.Renameat(rfd, tmp, rfd, final); err != nil {
		unix.Unlinkat(rfd, tmp, 0)
		return fmt.Errorf("receipt: rename: %w", err)
	}
	return nil
}

// receiptIntoSpare writes b into spare, gives it the receipt's mode (and
// the group of .receipts when that folder is setgid), and renames it to
// final in .receipts (rfd); on an error the spare is closed and removed.
func receiptIntoSpare(rfd int, final string, b []byte, spare *os.File, sparePath string) error {
	err := func() error {
		var ds unix.Stat_t
		if err := unix.Fstat(rfd, &ds); err != nil {
			return err
		}
		if ds.Mode&unix.S_ISGID != 0 {
			if err := spare.Chown(-1, int(ds.Gid)); err != nil {
				return err
			}
		}
		if _, err := spare.Write(b); err != nil {
			return err
		}
		if err := spare.Chmod(0o644); err != nil {
			return err
		}
		return spare.Close()
	}()
	if err == nil {
		err = unix.Renameat(unix.AT_FDCWD, sparePath, rfd, final)
	}
	if err != nil {
		spare.Close()
		os.Remove(sparePath)
	}
	return err
}

// LockState takes an exclusive flock on the lock file at path; the
// returned func releases it.
func LockState(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("another gate holds %s: %w", path, ErrBusy)
	}
	return func() { f.Close() }, nil
}

// AccessHint says, for a session folder the gate may not open, whose
// it is and what lets the gate in: its group must be one the gate user is
// in (an agent group's setgid inbox gives every folder that group; a root
// caller's fedmem-run sets the inbox's group itself).
func (in *Inbox) AccessHint(sess string, err error) string {
	if !errors.Is(err, unix.EACCES) {
		return ""
	}
	var st unix.Stat_t
	if unix.Fstatat(in.FD(), sess, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return ""
	}
	return fmt.Sprintf(" (folder owner %s, group %s, mode %04o; the gate user %s is not in that group: give the vault an agent group holding the agents' users and the gate user, fedmem init --gate-user USER --agent-group GROUP, or run agents as root; fedmem doctor --vault names the fix)",
		vault.UserName(int(st.Uid)), vault.GroupName(int(st.Gid)), st.Mode&0o7777, vault.UserName(os.Geteuid()))
}
