package pid1

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/mounts/pin"
	"github.com/fedmem/fedmem/sandbox"
)

// buildRootFor builds the plan's root, or, in a container (argv[1] is
// ociInitArg), finishes the one the runtime built from the same plan.
func buildRootFor(cfg *sandbox.InitConfig) ([]string, error) {
	if len(os.Args) > 1 && os.Args[1] == sandbox.OCIInitArg {
		// The runtime bound every writable source by its path: each
		// mount must be the folder the plan judged (rule
		// writable-source-swapped).
		if err := pin.CheckMounted(cfg.Plan); err != nil {
			return nil, err
		}
		if err := finishOCIRoot(cfg.Plan); err != nil {
			return nil, err
		}
		return nil, finishOCIViews(cfg.Plan)
	}
	return buildRoot(cfg.Plan, cfg.Idmapped, cfg.ProposeFd, inode{cfg.InboxDev, cfg.InboxIno})
}

// finishOCIRoot makes the procfs file masks what the plan asks. runc
// forbids mount targets under /proc and masks those files with a bind of
// the null device (its maskedPaths), writable and readable (empty); the
// namespace backend's mask refuses to open (EACCES). Each such bind is
// remounted read-only and nodev here: opening the device then fails with
// EACCES, and mounts.Verify checks it like any mask, unchanged. It runs as
// the init, with CAP_SYS_ADMIN of the container's user namespace, before
// any layer; a mask that is not a mount at exactly its path is left as it
// is for Verify to refuse.
func finishOCIRoot(pl *mounts.Plan) error {
	infos, err := mountinfo.GetMounts(nil)
	if err != nil {
		return err
	}
	for _, m := range pl.Mounts {
		if m.Kind != mounts.Masked || m.Dir || !strings.HasPrefix(m.Target, "/proc/") {
			continue
		}
		if !slices.ContainsFunc(infos, func(i *mountinfo.Info) bool { return i.Mountpoint == m.Target }) {
			continue
		}
		var st unix.Stat_t
		if err := unix.Stat(m.Target, &st); err != nil {
			return &sandbox.MountError{Op: "stat mask", Target: m.Target, Err: err}
		}
		if st.Mode&unix.S_IFMT != unix.S_IFCHR || unix.Major(st.Rdev) != 1 || unix.Minor(st.Rdev) != 3 {
			continue // not runc's null-device mask: Verify judges it
		}
		flags := uintptr(unix.MS_REMOUNT | unix.MS_BIND | unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC)
		if err := unix.Mount("", m.Target, "", flags, ""); err != nil {
			return &sandbox.MountError{Op: "remount mask read-only, nodev", Target: m.Target, Flags: flags, Err: err}
		}
	}
	return nil
}

func init() {
	// Runs before main in fedmem-run: only for the container's init.
	if len(os.Args) > 2 && os.Args[0] == sandbox.InitArg0 && os.Args[1] == sandbox.OCIInitArg && os.Args[2] == sandbox.OCIFdSocketArg {
		if err := receiveInitFds(); err != nil {
			fmt.Fprintln(os.Stderr, "fedmem-sandbox-init: descriptors:", err)
			os.Exit(sandbox.ExitFedmemError)
		}
	}
}

func receiveInitFds() error {
	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	// s itself may sit at 3: closed before the descriptors move there.
	defer func() {
		if s >= 0 {
			unix.Close(s)
		}
	}()
	if err := unix.Connect(s, &unix.SockaddrUnix{Name: sandbox.OCIFdDir + "/" + sandbox.OCIFdSocket}); err != nil {
		return err
	}
	buf := make([]byte, 1)
	oob := make([]byte, unix.CmsgSpace(8*4))
	_, oobn, _, _, err := unix.Recvmsg(s, buf, oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return err
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return fmt.Errorf("no descriptors received (%v)", err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil {
		return err
	}
	unix.Close(s)
	s = -1
	// Received fds land at the lowest free numbers, which may be the very
	// targets: move them all above first, then into place.
	high := make([]int, len(fds))
	for i, fd := range fds {
		if high[i], err = unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 100); err != nil {
			return err
		}
		unix.Close(fd)
	}
	for i, fd := range high {
		if err := unix.Dup3(fd, 3+i, 0); err != nil {
			return err
		}
		unix.Close(fd)
	}
	return nil
}
