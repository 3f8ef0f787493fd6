package gate

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/gate/durable"
	"github.com/fedmem/fedmem/gate/intake"
	"github.com/fedmem/fedmem/gate/ledger"
	"github.com/fedmem/fedmem/gate/origin"
	"github.com/fedmem/fedmem/vault"
	"github.com/fedmem/fedmem/vault/note"
)

// inbox is the vault's inbox folder, opened by intake.
type inbox = intake.Inbox

func (g *Gate) openInbox() (*inbox, error) { return intake.Open(g.vaultDir) }

// claimSession moves every ready entry of one session into claims/, writing
// the claim record first so a crash between the two steps is recoverable.
// It returns the claims made and the entries it held (left in place with a
// new receipt). At most max entries are taken or held per call: a held
// entry costs a receipt, an audit entry and a held/ mark, and counts
// against limits.max_drafts_per_session like a claim.
func (g *Gate) claimSession(in *inbox, sess string, max int) ([]Claim, int, error) {
	sfd, err := intake.OpenDir(in.FD(), sess)
	if err != nil {
		return nil, 0, fmt.Errorf("session %s: %w%s", sess, err, in.AccessHint(sess, err))
	}
	defer unix.Close(sfd)
	names, err := intake.ListDir(sfd)
	if err != nil {
		return nil, 0, fmt.Errorf("session %s: list: %w", sess, err)
	}
	cfd, err := unix.Open(g.statePath(claimsDir), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, 0, err
	}
	defer unix.Close(cfd)
	var out []Claim
	var errs []error
	held := 0
	for _, n := range names {
		if intake.IgnoredName(n) {
			continue
		}
		if len(out)+held >= max {
			break
		}
		// Look before taking: an entry the gate cannot read or move is left
		// where it is, with a receipt that says how to fix it, and never
		// stops the claim of the rest of the session.
		var st unix.Stat_t
		if err := unix.Fstatat(sfd, n, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			if !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("session %s: stat %q: %w", sess, n, err))
			}
			continue
		}
		if hold := g.unclaimable(sfd, n, &st); hold != nil {
			if g.holdEntry(in, sess, n, &st, hold) {
				held++
			}
			continue
		}
		c := Claim{ID: ledger.NewID(g.now()), Session: sess, Name: n, NameRaw: []byte(n), FirstSeen: g.now().UTC(),
			Stat: &origin.DraftOwner{UID: int(st.Uid), Mode: st.Mode & 0o7777, Ino: st.Ino, Ctime: time.Unix(st.Ctim.Unix()).UTC()}}
		if err := g.journalClaim(c); err != nil {
			return out, held, errors.Join(append(errs, err)...)
		}
		groupFault("claim-journaled")
		// renameat2(RENAME_NOREPLACE) moves the entry itself — a symlink,
		// FIFO or socket is moved, never followed.
		err := unix.Renameat2(sfd, n, cfd, c.ID+".draft", unix.RENAME_NOREPLACE)
		if err != nil {
			// The record stays in the journal, dead: its draft is not here.
			if errors.Is(err, unix.ENOENT) {
				continue // gone since listing
			}
			errs = append(errs, fmt.Errorf("session %s: move %q out of the inbox: %w (the gate needs write access to session directories)", sess, n, err))
			continue
		}
		if lz := durable.LazyFor(g.state); lz != nil {
			lz.AddDir(g.statePath(claimsDir)) // synced at the pass's barrier
			lz.AddDir(filepath.Join(g.vaultDir, vault.InboxDir, sess))
		} else {
			_ = unix.Fsync(cfd)
			_ = unix.Fsync(sfd)
		}
		_ = os.Remove(g.statePath(heldDir, fmt.Sprintf("%x.json", sha256.Sum256([]byte(sess+"/"+n)))))
		out = append(out, c)
	}
	return out, held, errors.Join(errs...)
}

// Receipt state and rules for inbox entries the gate leaves in place.
const (
	// StateUnclaimed is a receipt's state for an entry the gate saw but did
	// not take: no decision was made and nothing was deleted.
	StateUnclaimed = "unclaimed"
	heldDir        = "held"
)

// unclaimable returns why the entry n (stat st) must stay in the inbox, or
// nil when it can be claimed. A directory cannot be moved out of a session
// directory the gate does not own (rename(2) needs write access to the
// directory itself to update its ".."), and a regular file the gate cannot
// read (mkstemp creates 0600 files) would be rejected unread: both stay,
// with a receipt, and a readable file is claimed on a later pass.
func (g *Gate) unclaimable(sfd int, n string, st *unix.Stat_t) *note.Finding {
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		return &note.Finding{Rule: "claim-not-regular", Severity: note.Error, Message: fmt.Sprintf(
			"%q is a directory; only regular files are drafts. It was left in place and nothing was deleted; move its files up into the session folder (and remove the directory) to submit them", n)}
	case unix.S_IFREG:
		fd, err := intake.OpenAt(sfd, n, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY)
		if err == nil {
			unix.Close(fd)
			return nil
		}
		if errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) {
			return &note.Finding{Rule: "claim-unreadable", Severity: note.Error, Message: fmt.Sprintf(
				"the gate (uid %d) may not read %q (mode %04o, owner uid %d, group %d): drafts must be readable by the gate's group. Run `chmod g+r %s` (mode 0640); it was left in place, nothing was deleted, and it is claimed as soon as it is readable",
				g.uid, n, st.Mode&0o7777, st.Uid, st.Gid, shellQuote(n))}
		}
	}
	return nil
}

// heldMark is what the gate remembers about an entry it left in place, so
// that it writes the receipt (and the audit entry) once, not every pass.
type heldMark struct {
	Ino   uint64 `json:"ino"`
	Mode  uint32 `json:"mode"`
	Ctime int64  `json:"ctime_ns"`
	Rule  string `json:"rule"`
	// Session and Name say where the entry is, so that the sweep can drop
	// the mark once it is gone (pruneHeldMarks); a mark without them (an
	// older gate's) is kept.
	Session string `json:"session,omitempty"`
	Name    string `json:"name,omitempty"`
}

// holdEntry leaves n in the session and writes its receipt, once per change
// of the entry (inode, mode, ctime); it reports whether it wrote one.
func (g *Gate) holdEntry(in *inbox, sess, n string, st *unix.Stat_t, why *note.Finding) bool {
	mark := heldMark{Ino: st.Ino, Mode: st.Mode, Ctime: st.Ctim.Nano(), Rule: why.Rule, Session: sess, Name: n}
	if err := os.Mkdir(g.statePath(heldDir), 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		g.log.Warn("held entries dir", "err", err)
	}
	key := g.statePath(heldDir, fmt.Sprintf("%x.json", sha256.Sum256([]byte(sess+"/"+n))))
	var old heldMark
	if durable.ReadJSON(key, &old) == nil && old == mark {
		return false
	}
	r := Receipt{Draft: n, State: StateUnclaimed, Reasons: []note.Finding{*why}, Decided: g.now().UTC()}
	b, _ := json.MarshalIndent(r, "", "  ")
	if err := g.writeReceipt(in, sess, n, append(b, '\n')); err != nil {
		g.log.Warn("receipt not written", "session", sess, "name", n, "err", err)
		return true // it cost the pass as much
	}
	g.note("unclaimed", map[string]string{"session": sess, "name": n, "rule": why.Rule})
	g.log.Info("left in the inbox", "session", sess, "name", n, "rule", why.Rule)
	_ = durable.WriteJSON(key, mark)
	return true
}

// shellQuote quotes a file name for a command line in a receipt.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// returnClaim moves claims/ID.draft back to its session under its name (or
// "unreadable-ID-name" when that is taken) and drops the claim record: no
// decision was made on bytes the gate never read.
func (g *Gate) returnClaim(cfd int, id string) error {
	c, err := g.claimRecord(id)
	if err != nil {
		return err
	}
	in, err := g.openInbox()
	if err != nil {
		return err
	}
	defer in.Close()
	sfd, err := intake.OpenDir(in.FD(), c.Session)
	if err != nil {
		return fmt.Errorf("session %s: %w", c.Session, err)
	}
	defer unix.Close(sfd)
	name := c.rawName()
	err = unix.Renameat2(cfd, id+".draft", sfd, name, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.EEXIST) {
		name = "unreadable-" + id + "-" + name
		if len(name) > 255 {
			name = "unreadable-" + id + ".md"
		}
		err = unix.Renameat2(cfd, id+".draft", sfd, name, unix.RENAME_NOREPLACE)
	}
	if err != nil {
		return fmt.Errorf("return unreadable draft %s to session %s: %w", id, c.Session, err)
	}
	_ = unix.Fsync(sfd)
	g.note("returned", map[string]string{"id": id, "session": c.Session, "name": name})
	if c.legacy {
		return os.Remove(g.statePath(claimsDir, id+".json"))
	}
	return nil // the journal's record is dead: its draft is gone
}

// readResult is what reading a claimed entry produced.
type readResult struct {
	Bytes  []byte
	Sum    string
	Reject *note.Finding // the entry is not an acceptable draft
	Retry  bool          // the file changed while read: try again later
	// Owner is the inode the bytes were read from, as fstat(2) saw it
	// around the read (set with Bytes).
	Owner *origin.DraftOwner
}

func rejectClaim(rule, format string, args ...any) readResult {
	return readResult{Reject: &note.Finding{Rule: rule, Severity: note.Error, Message: fmt.Sprintf(format, args...)}}
}

// readClaim opens claims/ID.draft without following links and without
// blocking, accepts only a regular file with one link and at most max bytes
// (checked before reading), reads it once, and checks it did not change.
func (g *Gate) readClaim(id string, max int64) (readResult, error) {
	return g.readClaimAt(id, max, true)
}

// readClaimAt is readClaim; with mayReturn false (a read ahead of the
// draft's turn, prefetch.go) it changes nothing on disk: a draft that
// became unreadable yields errMustReturn, and its turn returns it.
func (g *Gate) readClaimAt(id string, max int64, mayReturn bool) (readResult, error) {
	cfd, err := unix.Open(g.statePath(claimsDir), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return readResult{}, err
	}
	defer unix.Close(cfd)
	// O_NONBLOCK: opening a FIFO for reading returns at once instead of
	// waiting for a writer; O_NOCTTY: a terminal never becomes ours.
	fd, err := intake.OpenAt(cfd, id+".draft", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY)
	switch {
	case errors.Is(err, unix.ELOOP):
		return rejectClaim("claim-symlink", "the draft is a symbolic link; links are never followed"), nil
	case errors.Is(err, unix.ENXIO) || errors.Is(err, unix.EOPNOTSUPP):
		return rejectClaim("claim-not-regular", "the draft is a socket or device, not a regular file"), nil
	case errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM):
		// Readable when claimed, unreadable now: never decide (or delete)
		// bytes nobody read; give the file back to its session.
		if !mayReturn {
			return readResult{}, errMustReturn
		}
		if err := g.returnClaim(cfd, id); err != nil {
			return readResult{}, err
		}
		return readResult{}, errReturned
	case err != nil:
		return readResult{}, fmt.Errorf("open claim %s: %w", id, err)
	}
	f := os.NewFile(uintptr(fd), id)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return readResult{}, err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		// A folder swapped in between the look and the rename (claimSession
		// leaves folders in place): its files were never read, so it goes
		// back to its session, where the next look holds it with a receipt
		// (deleting it with the claim would delete unread files).
		if !mayReturn {
			return readResult{}, errMustReturn
		}
		if err := g.returnClaim(cfd, id); err != nil {
			return readResult{}, err
		}
		return readResult{}, errReturned
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return rejectClaim("claim-not-regular", "the draft is a %s, not a regular file", intake.FileKind(st.Mode)), nil
	case st.Nlink != 1:
		return rejectClaim("claim-hardlink", "the draft has %d hard links; a draft must have exactly one", st.Nlink), nil
	case st.Size > max:
		return rejectClaim("claim-too-large", "the draft is %d bytes; the limit is %d (limits.max_draft_bytes)", st.Size, max), nil
	}
	// Clear O_NONBLOCK for the read (a regular file ignores it anyway).
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return readResult{}, fmt.Errorf("read claim %s: %w", id, err)
	}
	var st2 unix.Stat_t
	if err := unix.Fstat(fd, &st2); err != nil {
		return readResult{}, err
	}
	if int64(len(b)) > max {
		return rejectClaim("claim-too-large", "the draft grew past the limit of %d bytes while it was read", max), nil
	}
	if int64(len(b)) != st.Size || st2.Size != st.Size || st2.Mtim != st.Mtim || st2.Ctim != st.Ctim {
		return readResult{Retry: true}, nil
	}
	sum := sha256.Sum256(b)
	own := &origin.DraftOwner{UID: int(st.Uid), Mode: st.Mode & 0o7777, Ino: st.Ino}
	return readResult{Bytes: b, Sum: fmt.Sprintf("%x", sum), Owner: own}, nil
}

// SessionRecord is what fedmem-run records about a session, in
// 90-inbox/.sessions/<session>.json, where the agent cannot reach it (one
// definition, in package vault, shared with the launcher).
type SessionRecord = vault.SessionRecord

const maxSessionRecord = vault.MaxSessionRecord

// sessionRecord reads the enforcer's record of a session. A missing or
// unreadable record, or one whose uid is not the session directory's owner,
// yields nil: the drafts then come from an unknown agent.
func (g *Gate) sessionRecord(in *inbox, sess string) *SessionRecord {
	fd, err := intake.OpenAt(in.FD(), ".sessions/"+sess+".json", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), "session record")
	defer f.Close()
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(f, vault.MaxSessionRecord))
	if err != nil {
		return nil
	}
	var r SessionRecord
	if json.Unmarshal(b, &r) != nil || r.Session != sess {
		return nil
	}
	if owner, err := in.SessionOwner(sess); err != nil || owner != r.UID || int(st.Uid) != r.UID {
		return nil
	}
	return &r
}

// writeReceipt writes 90-inbox/<session>/.receipts/<name>.json without ever
// following a link the agent may have planted: the receipts folder is opened
// with openat2, the file is created O_EXCL under a fresh name and renamed
// over the final one (rename replaces a planted symlink, never follows it).
func (g *Gate) writeReceipt(in *inbox, sess, name string, b []byte) error {
	if g.spares != nil {
		f, p := g.spares.Take()
		return in.WriteReceiptSpare(sess, name, b, ".tmp-"+ledger.NewID(g.now()), f, p)
	}
	return in.WriteReceipt(sess, name, b, ".tmp-"+ledger.NewID(g.now()))
}

// lockState takes an exclusive flock on the state dir's lock file.
func (g *Gate) lockState() (func(), error) { return intake.LockState(g.statePath("lock")) }

// pruneHeldMarks removes the held/ marks whose entry is no longer in its
// session folder (claimed, moved, deleted, or the session pruned): without
// it an agent that keeps renaming folders it cannot submit grows held/ by
// up to max_drafts_per_session marks a pass, for ever. It returns how many
// it removed.
func (g *Gate) pruneHeldMarks(in *inbox) int {
	dir := g.statePath(heldDir)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		key := filepath.Join(dir, e.Name())
		var m heldMark
		if durable.ReadJSON(key, &m) != nil || m.Session == "" || m.Name == "" {
			continue
		}
		if m.Session != filepath.Base(m.Session) || m.Name != filepath.Base(m.Name) {
			continue // not a name the gate wrote
		}
		var st unix.Stat_t
		if err := unix.Fstatat(in.FD(), m.Session+"/"+m.Name, &st, unix.AT_SYMLINK_NOFOLLOW); errors.Is(err, unix.ENOENT) {
			if os.Remove(key) == nil {
				n++
			}
		}
	}
	return n
}
