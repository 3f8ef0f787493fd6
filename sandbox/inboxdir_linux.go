package sandbox

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/mounts"
)

// holdInbox makes sure spec.InboxDir holds the session folder: the
// launcher's descriptor, or (a caller of the backend that made the folder
// itself) Plan.Inbox opened now without following a link. release closes
// what holdInbox opened.
func holdInbox(spec *Spec) (release func(), err error) {
	release = func() {}
	if spec.Plan == nil || spec.Plan.Inbox == "" || spec.InboxDir != nil {
		return release, nil
	}
	fd, err := unix.Open(spec.Plan.Inbox, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return release, &Error{Code: ExitFedmemError, Stage: mounts.StageInbox, Msg: fmt.Sprintf("open session inbox %s: %v (not a directory, or replaced by a link)", spec.Plan.Inbox, err)}
	}
	spec.InboxDir = os.NewFile(uintptr(fd), spec.Plan.Inbox)
	f := spec.InboxDir
	return func() { f.Close() }, nil
}

// setInboxIdentity tells the init which directory its inbox mount must be
// (InitConfig.InboxDev, InboxIno): the one spec.InboxDir holds.
func setInboxIdentity(spec *Spec, cfg *InitConfig) error {
	if spec.InboxDir == nil {
		return nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(spec.InboxDir.Fd()), &st); err != nil {
		return &Error{Code: ExitFedmemError, Stage: mounts.StageInbox, Msg: fmt.Sprintf("stat session inbox %s: %v", spec.Plan.Inbox, err)}
	}
	cfg.InboxDev, cfg.InboxIno = uint64(st.Dev), st.Ino
	return nil
}

// cloneInboxFd is a detached clone of the session folder spec.InboxDir
// holds, made by root in the host's namespaces (open_tree on the
// descriptor: no name is looked up).
func cloneInboxFd(spec *Spec) (int, error) {
	fd, err := unix.OpenTree(int(spec.InboxDir.Fd()), "", unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_EMPTY_PATH)
	if err != nil {
		return -1, &Error{Code: ExitFedmemError, Stage: mounts.StageIdentity, Msg: fmt.Sprintf("open_tree %s (the session folder's descriptor): %v", spec.Plan.Inbox, err)}
	}
	return fd, nil
}
