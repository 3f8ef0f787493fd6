package propose

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// isWhiteout: overlayfs records a deletion as a character device 0:0.
func isWhiteout(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t) // os.Lstat's
	return ok && fi.Mode()&os.ModeCharDevice != 0 && st.Rdev == 0
}

// opaque: a directory overlayfs made opaque (its lower namesake's
// entries are hidden). The sandbox mounts with userxattr, so the mark is
// user.overlay.opaque; trusted.overlay.opaque is read too.
func opaque(dir string) bool {
	buf := make([]byte, 8)
	for _, name := range []string{"user.overlay.opaque", "trusted.overlay.opaque"} {
		if n, err := unix.Lgetxattr(dir, name, buf); err == nil && n > 0 && buf[0] == 'y' {
			return true
		}
	}
	return false
}

// UpperFull reports whether the proposal's tmpfs is full (or all but
// full: under 64KiB free), i.e. a write past limits.workdir_bytes failed.
func UpperFull(upper *os.File) bool {
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(upper.Fd()), &st); err != nil {
		return false
	}
	return st.Bavail*uint64(st.Bsize) < 64<<10
}
