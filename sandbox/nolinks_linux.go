package sandbox

import (
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/mounts/pin"
)

// OpenNoLinks opens p as an O_PATH descriptor without following any
// symbolic link on the way (the final one included): pin.OpenPath, the
// one such open of the launcher and the init.
func OpenNoLinks(p string) (int, error) { return pin.OpenPath(p) }

// OpenListedSocket opens a listed unix socket (or FIFO) of the host with
// no link followed on the way and checks what it is: the plan refuses a
// listed path through a link (mounts rule unix-socket-no-link), and this
// closes the window between the plan and the bind (another session's
// agent swapping a folder of a listed socket in a shared workdir for a
// link, or the socket for a directory or a secret file).
func OpenListedSocket(src string) (int, error) {
	fd, err := OpenNoLinks(src)
	if err != nil {
		return -1, &MountError{Op: "open listed socket (no link followed; rule " + mounts.RuleSocketNoLink + ")", Target: src, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, &MountError{Op: "stat listed socket", Target: src, Err: err}
	}
	if f := st.Mode & unix.S_IFMT; f != unix.S_IFSOCK && f != unix.S_IFIFO {
		unix.Close(fd)
		return -1, &MountError{Op: "listed socket", Target: src, Err: fmt.Errorf("not a unix socket or FIFO (mode %#o): not bound", st.Mode)}
	}
	return fd, nil
}
