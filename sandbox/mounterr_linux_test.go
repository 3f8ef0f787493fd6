package sandbox

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMountErrorNamesFlags: a failed mount step says the flags, data and
// attributes it asked for by name (a bit without a name in hex), and
// still unwraps to the kernel's errno.
func TestMountErrorNamesFlags(t *testing.T) {
	for _, c := range []struct {
		err  *MountError
		want string
	}{
		{&MountError{Op: "mount tmpfs", Target: "/tmp", Flags: unix.MS_NOSUID | unix.MS_NODEV, Data: "mode=0700,size=64k", Err: unix.EPERM},
			"mount tmpfs /tmp (MS_NOSUID|MS_NODEV, mode=0700,size=64k): operation not permitted"},
		{&MountError{Op: "remount ro", Source: "/a", Target: "/b", Flags: unix.MS_REMOUNT | unix.MS_BIND | unix.MS_RDONLY, Err: unix.EINVAL},
			"remount ro /a on /b (MS_BIND|MS_REMOUNT|MS_RDONLY): invalid argument"},
		{&MountError{Op: "mount_setattr", Target: "/v", Attr: unix.MOUNT_ATTR_RDONLY | unix.MOUNT_ATTR_NOSUID, Clear: unix.MOUNT_ATTR_NOEXEC, Err: unix.EPERM},
			"mount_setattr /v (set MOUNT_ATTR_RDONLY|MOUNT_ATTR_NOSUID, clear MOUNT_ATTR_NOEXEC): operation not permitted"},
		{&MountError{Op: "mount", Target: "/x", Flags: unix.MS_BIND | 1<<40, Err: unix.EPERM},
			"mount /x (MS_BIND|0x10000000000): operation not permitted"},
		{&MountError{Op: "mkdir", Target: "/dev/pts", Err: unix.EEXIST},
			"mkdir /dev/pts: file exists"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("Error() = %q\nwant      %q", got, c.want)
		}
		if !errors.Is(c.err, c.err.Err) {
			t.Errorf("%v does not unwrap to %v", c.err, c.err.Err)
		}
	}
}
