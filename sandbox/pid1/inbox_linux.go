package pid1

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/sandbox"
)

// inode names a directory: its device and inode numbers.
type inode struct{ dev, ino uint64 }

// cloneInbox is a detached clone of the session folder at src, for an
// init that cannot take fedmem-run's clone (an unprivileged caller's:
// open_tree clones only a mount of its own namespace). The folder is
// opened without following a link, checked to be the directory
// fedmem-run made (want) and cloned from that descriptor: a folder or a
// link the owner of 90-inbox/ put in its place is never bound.
func cloneInbox(src string, want inode, set, clr uint64) (int, error) {
	pfd, err := unix.Open(src, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
			err = fmt.Errorf("%w: a link or another file is there now, not the directory fedmem-run made (replaced after it was made)", err)
		}
		return -1, &sandbox.MountError{Op: "open session folder (no link followed)", Target: src, Err: err}
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return -1, &sandbox.MountError{Op: "stat session folder", Target: src, Err: err}
	}
	if got := (inode{uint64(st.Dev), st.Ino}); want.ino == 0 || got != want {
		return -1, &sandbox.MountError{Op: "open session folder", Target: src, Err: fmt.Errorf("the session folder is not the directory fedmem-run made (dev:ino %d:%d, want %d:%d): it was renamed away and something put in its place after it was made", got.dev, got.ino, want.dev, want.ino)}
	}
	return cloneTreeAt(pfd, "", unix.AT_EMPTY_PATH, src, set, clr)
}

// verifyInbox checks, in the finished root of every backend, that the
// inbox mount's root is the session folder fedmem-run made
// (InitConfig.InboxDev, InboxIno): the container runtimes bind the inbox
// by the name in their spec, and the owner of 90-inbox/ (the gate user,
// or a host account with the agent's uid) may have swapped the folder for
// a link or another folder since it was made. Rule inbox-identity.
func verifyInbox(cfg *sandbox.InitConfig) error {
	pl := cfg.Plan
	bound := false
	for _, m := range pl.Mounts {
		bound = bound || (m.Kind == mounts.BindRW && m.Source == pl.Inbox && pl.Inbox != "")
	}
	if !bound {
		return nil
	}
	want := inode{cfg.InboxDev, cfg.InboxIno}
	if want.ino == 0 {
		return &mounts.VerifyError{Path: pl.Inbox, Rule: "inbox-identity", Detail: "fedmem-run named no session folder to check the inbox mount against"}
	}
	var st unix.Stat_t
	if err := unix.Stat(pl.Inbox, &st); err != nil {
		return &mounts.VerifyError{Path: pl.Inbox, Rule: "inbox-identity", Detail: fmt.Sprintf("stat: %v", err)}
	}
	if got := (inode{uint64(st.Dev), st.Ino}); got != want {
		return &mounts.VerifyError{Path: pl.Inbox, Rule: "inbox-identity", Detail: fmt.Sprintf("the inbox mount's root (dev:ino %d:%d) is not the session folder fedmem-run made (%d:%d): it was replaced (renamed away, a link or another folder put in its place) before it was bound", got.dev, got.ino, want.dev, want.ino)}
	}
	return nil
}
