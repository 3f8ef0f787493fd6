package sandbox

import (
	"fmt"
	"strings"

	"golang.org/x/sys/unix"
)

// MountError is a failed mount step, naming its operation, source and
// target, and the mount flags it asked for by name: mount(2)'s MS_* flags
// and data, or the MOUNT_ATTR_* attributes mount_setattr(2) was to set and
// clear. A read-only bind that fails tells whether it was the bind or the
// remount that asked for MS_RDONLY.
type MountError struct {
	Op     string
	Source string
	Target string
	// Flags are the MS_* flags of a mount(2) step; 0: none, or not a
	// mount(2) step.
	Flags uintptr
	// Data is mount(2)'s data, the file system's options ("" for none).
	Data string
	// Attr and Clear are the MOUNT_ATTR_* attributes a mount_setattr(2)
	// step sets and clears; 0: none.
	Attr, Clear uint64
	Err         error
}

func (e *MountError) Error() string {
	what := e.Target
	if e.Source != "" {
		what = e.Source + " on " + e.Target
	}
	if f := e.flags(); f != "" {
		what += " (" + f + ")"
	}
	return fmt.Sprintf("%s %s: %v", e.Op, what, e.Err)
}

func (e *MountError) Unwrap() error { return e.Err }

// flags says the step's flags, data and attributes by name; "" without any.
func (e *MountError) flags() string {
	var parts []string
	if e.Flags != 0 {
		parts = append(parts, flagNames(uint64(e.Flags), msFlags))
	}
	if e.Data != "" {
		parts = append(parts, e.Data)
	}
	if e.Attr != 0 {
		parts = append(parts, "set "+flagNames(e.Attr, mountAttrs))
	}
	if e.Clear != 0 {
		parts = append(parts, "clear "+flagNames(e.Clear, mountAttrs))
	}
	return strings.Join(parts, ", ")
}

// flagName is one bit's name.
type flagName struct {
	bit  uint64
	name string
}

// msFlags are the mount(2) flags fedmem uses (and the usual others), in
// the order a reader expects them.
var msFlags = []flagName{
	{unix.MS_BIND, "MS_BIND"}, {unix.MS_REC, "MS_REC"}, {unix.MS_REMOUNT, "MS_REMOUNT"},
	{unix.MS_RDONLY, "MS_RDONLY"}, {unix.MS_NOSUID, "MS_NOSUID"}, {unix.MS_NODEV, "MS_NODEV"},
	{unix.MS_NOEXEC, "MS_NOEXEC"}, {unix.MS_PRIVATE, "MS_PRIVATE"}, {unix.MS_SLAVE, "MS_SLAVE"},
	{unix.MS_SHARED, "MS_SHARED"}, {unix.MS_UNBINDABLE, "MS_UNBINDABLE"}, {unix.MS_MOVE, "MS_MOVE"},
	{unix.MS_NOATIME, "MS_NOATIME"}, {unix.MS_NODIRATIME, "MS_NODIRATIME"}, {unix.MS_RELATIME, "MS_RELATIME"},
	{unix.MS_STRICTATIME, "MS_STRICTATIME"}, {unix.MS_SYNCHRONOUS, "MS_SYNCHRONOUS"},
}

// mountAttrs are mount_setattr(2)'s attributes.
var mountAttrs = []flagName{
	{unix.MOUNT_ATTR_RDONLY, "MOUNT_ATTR_RDONLY"}, {unix.MOUNT_ATTR_NOSUID, "MOUNT_ATTR_NOSUID"},
	{unix.MOUNT_ATTR_NODEV, "MOUNT_ATTR_NODEV"}, {unix.MOUNT_ATTR_NOEXEC, "MOUNT_ATTR_NOEXEC"},
	{unix.MOUNT_ATTR_NOSYMFOLLOW, "MOUNT_ATTR_NOSYMFOLLOW"}, {unix.MOUNT_ATTR_IDMAP, "MOUNT_ATTR_IDMAP"},
	{unix.MOUNT_ATTR_NODIRATIME, "MOUNT_ATTR_NODIRATIME"},
}

// flagNames names the bits of v joined by '|'; a bit without a name is
// said in hex, so nothing asked for goes unsaid.
func flagNames(v uint64, names []flagName) string {
	var out []string
	for _, n := range names {
		if v&n.bit != 0 {
			out = append(out, n.name)
			v &^= n.bit
		}
	}
	if v != 0 {
		out = append(out, fmt.Sprintf("%#x", v))
	}
	return strings.Join(out, "|")
}
