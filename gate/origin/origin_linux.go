package origin

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/gate/intake"
	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/vault"
)

// Of reads the session record of sess and decides whether it is proven
// to be the launcher's. A record is proven when it is a regular file with one
// link, not writable by group or others, names this session, and its uid
// owns the session directory, and when its writer is known:
//
//   - written by root (file owner 0): only root could have; or
//   - written by the setgid launcher: file group is the policy's
//     auto_promote.launcher_group, and 90-inbox/.sessions/ has that group,
//     belongs to root or the gate, and gives others no access at all (so
//     the record's owner, once the launcher dropped the group, can no longer
//     reach the file to rewrite or chmod it).
//
// A host user in the agents' group who makes a session directory and a
// record by hand fails these checks: the record is "unverified" and its
// drafts always wait for a reviewer.
func Of(in *intake.Inbox, pol *policy.Policy, sess string, gateUID int) Origin {
	var o Origin
	dfd, err := intake.OpenDir(in.FD(), ".sessions")
	if err != nil {
		o.Why = fmt.Sprintf("no session record folder: %v", err)
		return o
	}
	defer unix.Close(dfd)
	var dst unix.Stat_t
	if err := unix.Fstat(dfd, &dst); err != nil {
		o.Why = err.Error()
		return o
	}
	fd, err := intake.OpenAt(dfd, sess+".json", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY)
	if err != nil {
		o.Why = fmt.Sprintf("no session record: %v", err)
		return o
	}
	f := os.NewFile(uintptr(fd), "session record")
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		o.Why = err.Error()
		return o
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
		o.Why = fmt.Sprintf("the record is a %s with %d links, not a plain file", intake.FileKind(st.Mode), st.Nlink)
		return o
	}
	b, err := io.ReadAll(io.LimitReader(f, vault.MaxSessionRecord))
	if err != nil {
		o.Why = err.Error()
		return o
	}
	var r vault.SessionRecord
	if err := json.Unmarshal(b, &r); err != nil {
		o.Why = fmt.Sprintf("the record is not valid JSON: %v", err)
		return o
	}
	if r.Session != sess {
		o.Why = fmt.Sprintf("the record names session %q", clip(r.Session))
		return o
	}
	o.Record = &r
	if owner, err := in.SessionOwner(sess); err != nil || owner != r.UID {
		o.Why = fmt.Sprintf("the record's uid %d does not own the session folder", r.UID)
		return o
	}
	if st.Mode&0o022 != 0 {
		o.Why = fmt.Sprintf("the record is writable by group or others (mode %04o)", st.Mode&0o7777)
		return o
	}
	if st.Uid != 0 {
		gid, err := LauncherGID(pol.AutoPromote)
		switch {
		case err != nil:
			o.Why = err.Error()
			return o
		case gid < 0:
			o.Why = fmt.Sprintf("the record was written by uid %d and the policy names no auto_promote.launcher_group; only records written by root or the setgid launcher are proven", st.Uid)
			return o
		case int(st.Gid) != gid:
			o.Why = fmt.Sprintf("the record's group is %d, not the launcher group %d (it was not written by the setgid fedmem-run)", st.Gid, gid)
			return o
		case int(st.Uid) != r.UID:
			o.Why = fmt.Sprintf("the record belongs to uid %d but describes uid %d", st.Uid, r.UID)
			return o
		case int(dst.Gid) != gid || dst.Mode&0o007 != 0 || (dst.Uid != 0 && int(dst.Uid) != gateUID):
			o.Why = fmt.Sprintf("90-inbox/.sessions (owner %d, group %d, mode %04o) must belong to root or the gate, group %d, with no access for others (`fedmem init --launcher-group`)", dst.Uid, dst.Gid, dst.Mode&0o7777, gid)
			return o
		}
	}
	o.Verified = true
	TrustProfile(&o, pol.AutoPromote)
	return o
}
