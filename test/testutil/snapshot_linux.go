package testutil

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// Entry is what a Snapshot records of one path: everything an attacker could
// change about it (atime and ctime aside: reads move atime, and a change of
// ctime without a change here is a failed attempt the kernel still logged).
type Entry struct {
	Mode   fs.FileMode
	UID    uint32
	GID    uint32
	Size   int64
	Mtime  int64 // ns
	Ino    uint64
	Nlink  uint64
	Rdev   uint64
	SHA256 string            // regular files
	Link   string            // symlinks
	Xattrs map[string]string // every name llistxattr returns (trusted.* too, as root)
}

func (e Entry) String() string {
	var xs []string
	for k, v := range e.Xattrs {
		xs = append(xs, k+"="+v)
	}
	sort.Strings(xs)
	return fmt.Sprintf("mode=%v uid=%d gid=%d size=%d mtime=%d ino=%d nlink=%d rdev=%d sha256=%.12s link=%q xattrs=[%s]",
		e.Mode, e.UID, e.GID, e.Size, e.Mtime, e.Ino, e.Nlink, e.Rdev, e.SHA256, e.Link, strings.Join(xs, ","))
}

// Snapshot maps paths relative to its root ("." for the root) to entries.
type Snapshot map[string]Entry

// Take records root and everything beneath it, .git included, without
// following symlinks. Unreadable content is an error, not a skip.
func Take(root string) (Snapshot, error) {
	s := Snapshot{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		e, err := stat(p)
		if err != nil {
			return err
		}
		s[rel] = e
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", root, err)
	}
	return s, nil
}

func stat(p string) (Entry, error) {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		return Entry{}, fmt.Errorf("lstat %s: %w", p, err)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return Entry{}, err
	}
	e := Entry{
		Mode: fi.Mode(), UID: st.Uid, GID: st.Gid, Size: st.Size,
		Mtime: st.Mtim.Nano(), Ino: st.Ino, Nlink: uint64(st.Nlink), Rdev: st.Rdev,
	}
	switch {
	case fi.Mode().IsRegular():
		f, err := os.Open(p)
		if err != nil {
			return e, err
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return e, fmt.Errorf("read %s: %w", p, err)
		}
		e.SHA256 = hex.EncodeToString(h.Sum(nil))
	case fi.Mode()&fs.ModeSymlink != 0:
		if e.Link, err = os.Readlink(p); err != nil {
			return e, err
		}
	}
	if e.Xattrs, err = xattrs(p); err != nil {
		return e, err
	}
	return e, nil
}

func xattrs(p string) (map[string]string, error) {
	buf := make([]byte, 64*1024)
	n, err := unix.Llistxattr(p, buf)
	if err == unix.ENOTSUP || n == 0 {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("llistxattr %s: %w", p, err)
	}
	out := map[string]string{}
	for _, name := range strings.Split(strings.TrimRight(string(buf[:n]), "\x00"), "\x00") {
		v := make([]byte, 64*1024)
		m, err := unix.Lgetxattr(p, name, v)
		if err != nil {
			return nil, fmt.Errorf("lgetxattr %s %s: %w", p, name, err)
		}
		sum := sha256.Sum256(v[:m])
		out[name] = hex.EncodeToString(sum[:8])
	}
	return out, nil
}

// Diff lists every difference between two snapshots, one line per path,
// sorted. allow, when not nil, exempts paths whose changes are legitimate
// (the session's own inbox, say).
func Diff(before, after Snapshot, allow func(rel string) bool) []string {
	var out []string
	for p, b := range before {
		if allow != nil && allow(p) {
			continue
		}
		a, ok := after[p]
		if !ok {
			out = append(out, fmt.Sprintf("removed  %s (was %s)", p, b))
			continue
		}
		if d := diffEntry(b, a); d != "" {
			out = append(out, fmt.Sprintf("changed  %s: %s", p, d))
		}
	}
	for p, a := range after {
		if allow != nil && allow(p) {
			continue
		}
		if _, ok := before[p]; !ok {
			out = append(out, fmt.Sprintf("added    %s (%s)", p, a))
		}
	}
	sort.Strings(out)
	return out
}

func diffEntry(b, a Entry) string {
	var d []string
	f := func(name string, x, y any) {
		if fmt.Sprint(x) != fmt.Sprint(y) {
			d = append(d, fmt.Sprintf("%s %v -> %v", name, x, y))
		}
	}
	f("mode", b.Mode, a.Mode)
	f("uid", b.UID, a.UID)
	f("gid", b.GID, a.GID)
	f("size", b.Size, a.Size)
	f("mtime", b.Mtime, a.Mtime)
	f("ino", b.Ino, a.Ino)
	f("nlink", b.Nlink, a.Nlink)
	f("rdev", b.Rdev, a.Rdev)
	f("sha256", b.SHA256, a.SHA256)
	f("link", b.Link, a.Link)
	f("xattrs", Entry{Xattrs: b.Xattrs}.xattrString(), Entry{Xattrs: a.Xattrs}.xattrString())
	return strings.Join(d, "; ")
}

func (e Entry) xattrString() string {
	var xs []string
	for k, v := range e.Xattrs {
		xs = append(xs, k+"="+v)
	}
	sort.Strings(xs)
	return "[" + strings.Join(xs, ",") + "]"
}
