package sweep

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/gate/intake"
	"github.com/fedmem/fedmem/vault"
)

// PruneSessions removes the empty session folders of 90-inbox/ whose grace
// period has passed: after hours since the session record says it ended, or
// since the folder last changed (its mtime: a draft written, claimed or a
// receipt added), whichever is later. It never removes
//
//   - a folder holding anything (a draft, a dot file, .receipts/): the only
//     removal is rmdir(2) (unlinkat AT_REMOVEDIR), which the kernel refuses
//     with ENOTEMPTY, so an agent that writes into the folder between our
//     look and the removal keeps it and its file — there is no recursive
//     delete anywhere;
//   - the folder of a live session: its record (90-inbox/.sessions/<id>.json)
//     exists and has no `ended`;
//   - anything but a directory directly under the inbox (the name is
//     resolved under the inbox descriptor; a symlink is never followed:
//     unlinkat with AT_REMOVEDIR on a link fails with ENOTDIR).
//
// The record is read here only to wait longer (a later end, or a session
// still running), never to prune sooner, so a forged record cannot hasten
// the removal of anything. A session folder without a record whose agent
// has written nothing for the whole grace period is removed; if its agent
// still runs, its next write fails (ENOENT) rather than being lost.
func PruneSessions(in *intake.Inbox, hours int, now time.Time, note func(kind string, data any)) *SessionPrune {
	p := &SessionPrune{AfterHours: hours, Pruned: []string{}}
	if hours <= 0 {
		return p
	}
	grace := time.Duration(hours) * time.Hour
	sessions, err := in.Sessions()
	if err != nil {
		p.Errors = append(p.Errors, fmt.Sprintf("list inbox: %v", err))
		return p
	}
	for _, sess := range sessions {
		empty, mtime, err := emptyDir(in.FD(), sess)
		if err != nil {
			if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR) && !errors.Is(err, unix.ELOOP) {
				p.Errors = append(p.Errors, fmt.Sprintf("session %s: %v", sess, err))
			}
			continue
		}
		if !empty {
			p.Kept++
			continue
		}
		since := mtime
		if ended, live := sessionEnd(in, sess); live {
			p.Waiting++
			continue
		} else if ended.After(since) {
			since = ended
		}
		if now.Sub(since) < grace {
			p.Waiting++
			continue
		}
		switch err := unix.Unlinkat(in.FD(), sess, unix.AT_REMOVEDIR); {
		case err == nil:
			p.Pruned = append(p.Pruned, sess)
			note("session-pruned", map[string]string{"session": sess, "idle_since": since.UTC().Format(time.RFC3339)})
		case errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST):
			p.Kept++ // written to since we looked: kept, as it must be
		case errors.Is(err, unix.ENOENT):
		default:
			p.Errors = append(p.Errors, fmt.Sprintf("rmdir session %s: %v", sess, err))
		}
	}
	return p
}

// emptyDir opens name under dirfd without following links and reports
// whether it has no entries, and its modification time.
func emptyDir(dirfd int, name string) (bool, time.Time, error) {
	fd, err := intake.OpenDir(dirfd, name)
	if err != nil {
		return false, time.Time{}, err
	}
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return false, time.Time{}, err
	}
	mtime := time.Unix(st.Mtim.Sec, st.Mtim.Nsec)
	names, err := f.Readdirnames(1)
	if errors.Is(err, io.EOF) {
		return true, mtime, nil
	}
	if err != nil {
		return false, mtime, err
	}
	return len(names) == 0, mtime, nil
}

// sessionEnd reads the `ended` time of a session's record. live: a record
// exists that says the session has not ended. An unreadable or absent
// record yields neither (the folder's own mtime decides). Used only to wait
// longer, so the record's writer is not checked here (see pruneSessions).
func sessionEnd(in *intake.Inbox, sess string) (ended time.Time, live bool) {
	fd, err := intake.OpenAt(in.FD(), ".sessions/"+sess+".json", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY)
	if err != nil {
		return time.Time{}, false
	}
	f := os.NewFile(uintptr(fd), "session record")
	defer f.Close()
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return time.Time{}, false
	}
	b, err := io.ReadAll(io.LimitReader(f, vault.MaxSessionRecord))
	if err != nil {
		return time.Time{}, false
	}
	var r vault.SessionRecord
	if json.Unmarshal(b, &r) != nil || r.Session != sess {
		return time.Time{}, false
	}
	if r.Ended == "" {
		return time.Time{}, true
	}
	t, err := time.Parse(time.RFC3339Nano, r.Ended)
	if err != nil {
		// An end we cannot read: wait as for a live session rather than
		// guess.
		return time.Time{}, true
	}
	return t, false
}
