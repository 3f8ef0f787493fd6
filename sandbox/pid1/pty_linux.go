package pid1

import (
	"fmt"
	"os"

	"github.com/fedmem/fedmem/sandbox"
	"golang.org/x/sys/unix"
)

const initPTYFd = 5 // unix socket to send the pty master back on (TTY mode)

// makeSandboxPTY opens a pseudo-terminal on the sandbox's private devpts,
// makes its slave this session leader's controlling terminal and stdio, and
// sends the master to the parent. It must run after pivot_root, before any
// layer is applied, in the init (a session leader without a terminal).
func makeSandboxPTY(cfg *sandbox.InitConfig) error {
	sock := os.NewFile(initPTYFd, "pty-child")
	defer sock.Close()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return fmt.Errorf("open /dev/ptmx: %w", err)
	}
	defer master.Close()
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		return fmt.Errorf("unlockpt: %w", err)
	}
	// TIOCGPTPEER opens the slave of this very master without a path
	// lookup (no race on /dev/pts/N); its argument is the open flags.
	r, _, errno := unix.Syscall(unix.SYS_IOCTL, master.Fd(), unix.TIOCGPTPEER, uintptr(unix.O_RDWR|unix.O_NOCTTY))
	if errno != 0 {
		return fmt.Errorf("TIOCGPTPEER: %w", errno)
	}
	slave := int(r)
	if cfg.AgentSwitch {
		// The agent's own terminal: it may reopen it by name (ttyname).
		if err := unix.Fchown(slave, cfg.AgentUID, cfg.AgentGID); err != nil {
			return fmt.Errorf("chown pty: %w", err)
		}
	}
	if err := unix.IoctlSetInt(slave, unix.TIOCSCTTY, 0); err != nil {
		return fmt.Errorf("TIOCSCTTY: %w", err)
	}
	for fd := 0; fd <= 2; fd++ {
		if err := unix.Dup3(slave, fd, 0); err != nil {
			return fmt.Errorf("dup3 pty slave: %w", err)
		}
	}
	if slave > 2 {
		unix.Close(slave)
	}
	rights := unix.UnixRights(int(master.Fd()))
	if err := unix.Sendmsg(int(sock.Fd()), []byte{0}, rights, nil, 0); err != nil {
		return fmt.Errorf("send pty master: %w", err)
	}
	return nil
}
