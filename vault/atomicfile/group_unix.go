//go:build unix

package atomicfile

import (
	"os"
	"syscall"
)

// matchGroup gives f the group of dir when dir is setgid (what a file
// created in dir gets).
func matchGroup(f *os.File, dir string) error {
	var ds, fs syscall.Stat_t
	if err := syscall.Stat(dir, &ds); err != nil {
		return err
	}
	if ds.Mode&syscall.S_ISGID == 0 {
		return nil
	}
	if err := syscall.Fstat(int(f.Fd()), &fs); err != nil {
		return err
	}
	if fs.Gid == ds.Gid {
		return nil
	}
	return f.Chown(-1, int(ds.Gid))
}
