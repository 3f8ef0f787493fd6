//go:build linux

package k8s

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/vault"
)

// PrepareInbox creates the session's inbox directory session under dir (the
// vault's 90-inbox), owned by the calling uid, mode 2770: the group comes
// from 90-inbox (setgid when the vault was made with --agent-group), so the
// gate, a member of that group, can move drafts out, as with fedmem-run's
// own session directories. It never follows a link: dir and the new
// directory are opened with O_NOFOLLOW. Run again after a restart of the
// init container, it accepts the directory it made before (a directory
// owned by the caller) and refuses anything else.
func PrepareInbox(dir, session string) error {
	if !vault.ValidSessionID(session) {
		return fmt.Errorf("session %q: not a valid session id (letters, digits, '-', '_'; at most 64 bytes)", session)
	}
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open inbox %s: %w (not a directory, or a link)", dir, err)
	}
	defer unix.Close(dfd)
	target := dir + "/" + session
	if err := unix.Mkdirat(dfd, session, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("create session inbox %s: %w (is this uid in the group of %s? see `fedmem init --agent-group`)", target, err, dir)
	}
	fd, err := unix.Openat(dfd, session, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open session inbox %s: %w (not a directory, or a link)", target, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", target, err)
	}
	if int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("session inbox %s exists and belongs to uid %d, not %d: refusing to share it", target, st.Uid, os.Geteuid())
	}
	// The raw mode: os.Chmod would drop the setgid bit.
	if err := unix.Fchmod(fd, 0o2770); err != nil {
		return fmt.Errorf("chmod %s: %w", target, err)
	}
	return nil
}
