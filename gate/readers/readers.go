package readers

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/vault"
)

// Session is one session's record as the audit sees it.
type Session struct {
	vault.SessionRecord
	// Stored: the gate holds a copy of the record (its state's sessions/);
	// Live: the record is still in 90-inbox/.sessions/.
	Stored bool `json:"stored"`
	Live   bool `json:"live"`
	// Changed: the live record's receipt digest is not the stored copy's
	// (the stored copy is the one used).
	Changed bool `json:"changed,omitempty"`
	// Unproven says why the record is not proven to be fedmem-run's: a
	// live record not written by root, writable by group or others, or
	// with more than one link (any host user may write a record of their
	// own in 90-inbox/.sessions/). Its receipt is a claim: the session
	// counts as one nobody recorded, never as a reader. "" when proven
	// (the gate's stored copies are only of proven records).
	Unproven string `json:"unproven,omitempty"`
}

// maxRecord bounds one record read (fedmem-run writes none larger).
const maxRecord = vault.MaxSessionRecord

// Load reads every session record of the vault and the gate's stored
// copies (stateDir; "" or unreadable: the live records only). Records
// that cannot be read are returned as problems, never dropped silently.
func Load(vaultDir, stateDir string) ([]Session, []string, error) {
	byID := map[string]*Session{}
	var problems []string
	read := func(dir string, stored bool) error {
		ents, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, e := range ents {
			id, ok := strings.CutSuffix(e.Name(), ".json")
			if !ok || strings.HasPrefix(id, ".") {
				continue
			}
			var r vault.SessionRecord
			st, err := readJSONStat(filepath.Join(dir, e.Name()), &r)
			if err == nil && r.Session != id {
				err = fmt.Errorf("%s: names session %q", filepath.Join(dir, e.Name()), r.Session)
			}
			if err != nil {
				problems = append(problems, err.Error())
				if !stored && byID[id] == nil {
					// Fail closed: a live record that cannot be read still
					// names a session that could have read any note (an
					// agent can make its own record too large), unless the
					// gate holds a copy (read next, it wins).
					byID[id] = &Session{SessionRecord: vault.SessionRecord{Session: id}, Live: true, Unproven: "unreadable: " + err.Error()}
				}
				continue
			}
			unproven := ""
			if !stored {
				unproven = unprovenWhy(st)
			}
			s := byID[id]
			switch {
			case s == nil:
				byID[id] = &Session{SessionRecord: r, Stored: stored, Live: !stored, Unproven: unproven}
			case stored:
				s.Changed = s.VaultReadsDigest != r.VaultReadsDigest
				s.SessionRecord, s.Stored, s.Unproven = r, true, ""
			default:
				s.Live = true
				s.Changed = s.VaultReadsDigest != r.VaultReadsDigest
			}
		}
		return nil
	}
	if err := read(filepath.Join(vaultDir, vault.SessionsDir), false); err != nil {
		return nil, problems, fmt.Errorf("session records: %w", err)
	}
	if stateDir != "" {
		if err := read(filepath.Join(stateDir, vault.GateSessionsDir), true); err != nil {
			problems = append(problems, "the gate's stored sessions: "+err.Error())
		}
	}
	out := make([]Session, 0, len(byID))
	for _, s := range byID {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Started != out[j].Started {
			return out[i].Started < out[j].Started
		}
		return out[i].Session < out[j].Session
	})
	return out, problems, nil
}

// unprovenWhy is why a live record is not proven to be fedmem-run's, ""
// when it is: written by root (fedmem-run as root, the only caller whose
// sessions have a receipt), not writable by group or others, one link —
// the gate's proof of origin (originOf) for a record with a receipt.
func unprovenWhy(st *unix.Stat_t) string {
	switch {
	case st.Uid != 0:
		return fmt.Sprintf("written by uid %d, not by fedmem-run as root: its receipt is a claim", st.Uid)
	case st.Mode&0o022 != 0:
		return fmt.Sprintf("writable by group or others (mode %04o): its receipt is a claim", st.Mode&0o7777)
	case st.Nlink != 1:
		return fmt.Sprintf("has %d links: its receipt is a claim", st.Nlink)
	}
	return ""
}

// readJSON reads one bounded regular file (no link followed) as JSON.
func readJSON(p string, v any) error {
	_, err := readJSONStat(p, v)
	return err
}

// readJSONStat is readJSON, and the file's stat. The file is opened
// without following a link and without blocking (a FIFO swapped in after
// a check would hang the audit and the gate's sweep), and checked on the
// descriptor: what is checked is what is read.
func readJSONStat(p string, v any) (*unix.Stat_t, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: p, Err: err}
	}
	f := os.NewFile(uintptr(fd), p)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: p, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%s: not a regular file", p)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxRecord+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxRecord {
		return nil, fmt.Errorf("%s: larger than %d bytes", p, maxRecord)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return &st, nil
}

// Reader is one session that opened the note.
type Reader struct {
	Session string `json:"session"`
	Profile string `json:"profile"`
	UID     int    `json:"uid"`
	Workdir string `json:"workdir,omitempty"`
	// First is when the session first opened the note; Commit the vault
	// HEAD the session saw, Blob the note's blob id there.
	First  string `json:"first,omitempty"`
	Commit string `json:"commit,omitempty"`
	Blob   string `json:"blob,omitempty"`
	// Maybe: the note is not in what the session's receipt lists, but the
	// receipt cannot say it was not read: it was cut (truncated), lost
	// events, has opens it could not name, or the session opened files
	// under the vault's .git (a note read through Git's objects is not
	// named) — or it is listed by a receipt whose attribution is
	// any-process (any opener's, not only the agent's). MaybeWhy says which.
	Maybe    bool   `json:"maybe,omitempty"`
	MaybeWhy string `json:"maybe_why,omitempty"`
}

// Answer is Readers' result: the sessions that read the note, and those
// whose reads nobody recorded (they could have).
type Answer struct {
	Note       string   `json:"note"`
	Readers    []Reader `json:"readers"`
	Unrecorded []string `json:"unrecorded"`
	Problems   []string `json:"problems,omitempty"`
}

// NotePath is note as a vault-relative path: a path relative to the vault,
// or an absolute path inside it.
func NotePath(vaultDir, note string) (string, error) {
	if filepath.IsAbs(note) {
		rel, err := filepath.Rel(vaultDir, note)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return "", fmt.Errorf("note %s: not inside the vault %s", note, vaultDir)
		}
		note = rel
	}
	p := path.Clean(filepath.ToSlash(note))
	if p == "." || p == ".." || strings.HasPrefix(p, "../") || strings.HasPrefix(p, "/") {
		return "", fmt.Errorf("note %q: not a path inside the vault", note)
	}
	return p, nil
}

// Readers lists the sessions whose receipt names note (vault-relative),
// first opened at or after since (zero: any time), oldest first.
func Readers(sessions []Session, note string, since time.Time) Answer {
	a := Answer{Note: note, Readers: []Reader{}, Unrecorded: []string{}}
	for _, s := range sessions {
		rr := s.VaultReads
		// A session matters from since on if it was still running then.
		ended, err := time.Parse(time.RFC3339Nano, s.Ended)
		inWindow := since.IsZero() || s.Ended == "" || err != nil || !ended.Before(since)
		if rr == nil || !rr.Recorded || s.Unproven != "" {
			if s.Unproven != "" && rr != nil && rr.Recorded {
				a.Problems = append(a.Problems, fmt.Sprintf("session %q: the record claims a read receipt but is %s", s.Session, s.Unproven))
			}
			if inWindow {
				a.Unrecorded = append(a.Unrecorded, s.Session)
			}
			continue
		}
		r := Reader{Session: s.Session, Profile: s.Profile, UID: s.UID, Workdir: s.Workdir, Commit: rr.Commit}
		found := false
		for _, x := range rr.Reads {
			if x.Path == note {
				r.First, r.Blob, found = x.First, x.Blob, true
				break
			}
		}
		if found && rr.Attribution == vault.AttributionAnyProcess {
			// Inode marks (an unprivileged caller): the receipt lists every
			// process's opens of vault files while the session ran.
			r.Maybe, r.MaybeWhy = true, "listed, but the receipt holds every process's opens of vault files during the session (attribution any-process): the agent's or another's"
		}
		if !found {
			why := maybeWhy(rr)
			if why == "" || !inWindow {
				continue
			}
			r.Maybe, r.MaybeWhy = true, why
		}
		if t, err := time.Parse(time.RFC3339Nano, r.First); found && !since.IsZero() && err == nil && t.Before(since) {
			continue
		}
		a.Readers = append(a.Readers, r)
	}
	return a
}

// maybeWhy is why a receipt that does not list a note cannot say the
// session did not read it; "" when it can.
func maybeWhy(rr *vault.ReadReceipt) string {
	switch {
	case rr.Truncated:
		return fmt.Sprintf("receipt cut at %d entries", len(rr.Reads))
	case rr.Lost:
		return "the kernel's event queue overflowed: opens were lost"
	case rr.Unattributed > 0:
		return fmt.Sprintf("%d open(s) in the vault could not be named", rr.Unattributed)
	case rr.GitOpens > 0:
		return fmt.Sprintf("opened %d file(s) under the vault's .git: a note read through Git's objects is not named", rr.GitOpens)
	}
	return ""
}

// Of names the sessions whose read receipt names the note p (as `fedmem
// audit readers p` lists them, "maybe" readers included) and counts the
// ended sessions with no receipt. Reading the records costs O(sessions);
// the sweep calls it only when it withholds a note.
func Of(vaultDir, state, p string) (readBy []string, unrecorded int) {
	sessions, _, err := Load(vaultDir, state)
	if err != nil {
		return []string{}, 0
	}
	a := Readers(sessions, p, time.Time{})
	readBy = []string{}
	for _, r := range a.Readers {
		readBy = append(readBy, r.Session)
	}
	return readBy, len(a.Unrecorded)
}
