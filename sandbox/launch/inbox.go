package launch

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/sandbox"
	"github.com/fedmem/fedmem/vault"
)

// checkInboxReachable refuses, with a message that says what to do, a
// vault whose inbox the agent's uid cannot enter. Root would pass any
// access check out here, but not inside the sandbox's user namespace, where
// it holds no capability over the gate's files.
func checkInboxReachable(vaultDir string, uid, gid int) error {
	dir := filepath.Join(vaultDir, vault.InboxDir)
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return fmt.Errorf("inbox %s: %w", dir, err)
	}
	groups, _ := unix.Getgroups()
	if uid != os.Getuid() {
		// Another agent uid (a root caller's): its primary group, and the
		// vault's agent group when its user is a member, which it keeps
		// (sandbox.KeptGroups).
		groups = sandbox.KeptGroups(uid, gid, int(st.Gid))
	}
	member := int(st.Gid) == gid || slices.Contains(groups, int(st.Gid))
	// The agent must reach its session directory through 90-inbox
	// (search); it must create it too, unless root creates it for it.
	need := uint32(0o3)
	if os.Geteuid() == 0 {
		need = 0o1
	}
	ok := (int(st.Uid) == uid && st.Mode>>6&need == need) ||
		(int(st.Uid) != uid && member && st.Mode>>3&need == need) ||
		(int(st.Uid) != uid && !member && st.Mode&need == need)
	if !ok {
		verb := "create" // an unprivileged caller's agent makes its folder itself
		if os.Geteuid() == 0 {
			verb = "reach" // root makes it; the agent walks through the inbox to it
		}
		return fmt.Errorf("inbox %s (owner %s, group %s, mode %04o): the agent (%s, %s) cannot %s its session directory there; %s",
			dir, vault.UserName(int(st.Uid)), vault.GroupName(int(st.Gid)), st.Mode&0o7777, vault.UserName(uid), vault.GroupName(gid), verb, vault.InboxFix(vaultDir, int(st.Gid), uid, os.Geteuid() == 0))
	}
	return nil
}

// inboxFinding is one inbox problem --explain reports beside the
// reachability check: the rule, what was found, whether a run would be
// refused, and the fix.
type inboxFinding struct {
	Rule    string
	Refuses bool
	Detail  string
	Fix     string
}

func (f inboxFinding) String() string {
	lead := "warning"
	if f.Refuses {
		lead = "a run would be REFUSED"
	}
	return fmt.Sprintf("%s [%s]: %s; fix: %s", lead, f.Rule, f.Detail, f.Fix)
}

// inboxFindings checks what checkInboxReachable does not: what the inbox
// is, the file system it is on, the setgid and sticky bits fedmem init
// sets (01777, or 03770 with an agent group), and the session records'
// directory. gid is the agent's group.
func inboxFindings(vaultDir string, gid int) []inboxFinding {
	dir := filepath.Join(vaultDir, vault.InboxDir)
	var out []inboxFinding
	var st unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return nil // missing: the vault check and checkInboxReachable say so
	}
	mode := st.Mode & 0o7777
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
	case unix.S_IFLNK:
		return append(out, inboxFinding{Rule: "inbox-not-link", Refuses: false, Detail: dir + " is a symbolic link: session folders land wherever it points",
			Fix: "replace it by a directory: `fedmem init " + vaultDir + "`"})
	default:
		return append(out, inboxFinding{Rule: "inbox-directory", Refuses: true, Detail: dir + " is not a directory",
			Fix: "move it away and run `fedmem init " + vaultDir + "`"})
	}
	var sfs unix.Statfs_t
	if unix.Statfs(dir, &sfs) == nil && sfs.Flags&unix.ST_RDONLY != 0 {
		out = append(out, inboxFinding{Rule: "inbox-writable-fs", Refuses: true, Detail: dir + " is on a read-only file system: the session folder cannot be created",
			Fix: "put the vault on a writable file system (or remount it read-write)"})
	}
	// Group-only inbox (no access for others): an agent group's. Its
	// session folders must inherit that group (setgid), or the gate user,
	// a member, cannot take the drafts out.
	if mode&0o007 == 0 && mode&0o070 != 0 && mode&0o2000 == 0 {
		out = append(out, inboxFinding{Rule: "inbox-setgid", Detail: fmt.Sprintf("%s (group %d, mode %04o) is the agent group's but not setgid: session folders get the agent's own group %d and the gate cannot collect the drafts", dir, st.Gid, mode, gid),
			Fix: fmt.Sprintf("`fedmem init --agent-group %d %s` (mode 03770)", st.Gid, vaultDir)})
	}
	// Shared (group- or world-writable) without sticky: one agent can
	// rename or remove another session's folder.
	if mode&0o022 != 0 && mode&0o1000 == 0 {
		out = append(out, inboxFinding{Rule: "inbox-sticky", Detail: fmt.Sprintf("%s (mode %04o) is shared but not sticky: an agent can remove or rename another session's folder", dir, mode),
			Fix: "`fedmem init " + vaultDir + "` (mode 01777, or 03770 with --agent-group)"})
	}
	sdir := filepath.Join(vaultDir, vault.SessionsDir)
	if err := unix.Stat(sdir, &st); err == nil && unix.Access(sdir, unix.W_OK|unix.X_OK) != nil && os.Geteuid() != 0 {
		out = append(out, inboxFinding{Rule: "sessions-writable", Detail: fmt.Sprintf("%s (owner %d, group %d, mode %04o) is not writable by uid %d: no session record, the gate treats the drafts as from an unknown agent", sdir, st.Uid, st.Gid, st.Mode&0o7777, os.Geteuid()),
			Fix: "`fedmem init " + vaultDir + "`, or run the fedmem-run installed setgid to the vault's launcher group (docs/gate.md, Trust model)"})
	}
	return out
}

// createInbox makes the session's inbox directory, owned by the agent's uid,
// mode 2770: its group is the inbox's (90-inbox is setgid when the vault has
// an agent group; a root caller sets it on an everyone's inbox too), so a
// gate user in that group can move drafts out and write receipts; nobody
// else on the host can look in.
//
// It returns the folder opened (O_NOFOLLOW), which the backends bind
// (sandbox.Spec.InboxDir) instead of its name: the owner of 90-inbox may
// rename the folder away and put a link or another folder in its place
// at any time after the mkdir (TestRedteamInboxSwappedBeforeBind).
func createInbox(vaultDir, inbox string, uid int) (*os.File, error) {
	if err := os.Mkdir(inbox, 0o700); err != nil {
		return nil, fmt.Errorf("create session inbox %s: %w (can this user write %s/%s? see `fedmem init --agent-group`)", inbox, err, vaultDir, vault.InboxDir)
	}
	// Through a descriptor of the folder just made, never by name: the
	// owner of 90-inbox (a sticky directory's owner may rename any entry)
	// could swap the folder for a link between the mkdir and a chmod by
	// name, and root would chmod the link's target
	// (TestCreateInboxNoFollowAfterMkdir).
	fd, err := unix.Open(inbox, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open session inbox %s: %w (replaced after it was made?)", inbox, err)
	}
	ok := false
	defer func() {
		if !ok {
			unix.Close(fd)
		}
	}()
	var own unix.Stat_t
	if err := unix.Fstat(fd, &own); err != nil {
		return nil, fmt.Errorf("stat session inbox %s: %w", inbox, err)
	}
	if int(own.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("session inbox %s: owned by uid %d, not by this process (uid %d) that made it: it was replaced after it was made", inbox, own.Uid, os.Geteuid())
	}
	if os.Geteuid() == 0 && uid != os.Geteuid() {
		// The agent owns it; its group is 90-inbox's, which is the gate's
		// way in. A setgid inbox (an agent group) gave it that already; an
		// everyone's inbox (01777, fedmem init --gate-user without
		// --agent-group) is the gate user's, and the folder inherited root's
		// group instead: the gate, as its own user, could not collect the
		// drafts ("session …: permission denied").
		gid := -1
		var st unix.Stat_t
		if err := unix.Stat(filepath.Join(vaultDir, vault.InboxDir), &st); err == nil && st.Gid != 0 {
			gid = int(st.Gid)
		}
		if err := unix.Fchown(fd, uid, gid); err != nil {
			return nil, fmt.Errorf("chown %s: %w", inbox, err)
		}
	}
	if err := unix.Fchmod(fd, 0o2770); err != nil {
		return nil, fmt.Errorf("chmod %s: %w", inbox, err)
	}
	ok = true
	return os.NewFile(uintptr(fd), inbox), nil
}

// removeUnstartedInbox removes the session folder of a run whose agent
// never started. rmdir, not a recursive removal: it removes only an empty
// directory and never a file or a link put in its place, so whatever is
// there (nothing of the agent's can be, it never ran) stays.
//
// made, when set, is the folder createInbox made: a name that leads to
// another directory now (the owner of 90-inbox/ swapped it; the init
// refused to bind it) is left alone.
func removeUnstartedInbox(inbox string, made *os.File) bool {
	if made != nil {
		var a, b unix.Stat_t
		if unix.Fstat(int(made.Fd()), &a) != nil || unix.Lstat(inbox, &b) != nil || a.Dev != b.Dev || a.Ino != b.Ino {
			return false
		}
	}
	return unix.Rmdir(inbox) == nil
}

// createOwned creates a missing writable home path the profile names (a
// directory when dir), owned by uid:gid.
func createOwned(p string, dir bool, uid, gid int) error {
	if _, err := os.Lstat(p); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	if dir {
		if err := os.Mkdir(p, 0o700); err != nil {
			return err
		}
	} else {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		f.Close()
	}
	if os.Geteuid() == 0 {
		return os.Lchown(p, uid, gid)
	}
	return nil
}

// writeSessionRecord stores the enforcer's facts about the session where the
// agent cannot reach them (the sandbox hides every entry of the inbox but
// the session's own directory); the gate takes provenance from it. The
// sessions directory is shared (sticky, like /tmp), so the record is
// written without following a link: a fresh O_EXCL|O_NOFOLLOW file under a
// random name in the opened directory, renamed over the final name
// (renameat replaces a planted link, never follows it).
func writeSessionRecord(vaultDir string, rep *Report, stderr io.Writer) {
	dir := filepath.Join(vaultDir, vault.SessionsDir)
	if _, err := os.Lstat(dir); err != nil {
		if err := os.Mkdir(dir, 0o1777); err != nil && !errors.Is(err, fs.ErrExist) {
			fmt.Fprintf(stderr, "fedmem-run: warning: no session record (%v); the gate will treat the drafts as from an unknown agent\n", err)
			return
		}
		// Sticky like /tmp: a user cannot replace another's record. (The
		// raw mode: os.Chmod would drop the 01000 bit.)
		_ = unix.Chmod(dir, 0o1777)
	}
	b, err := recordBytes(rep)
	if err == nil {
		err = writeRecordBytes(dir, rep.Session+".json", b)
	}
	if err != nil {
		fmt.Fprintf(stderr, "fedmem-run: warning: session record: %v\n", err)
	}
}

// recordOf is what the session record holds: the report, or, when that
// would pass vault.MaxSessionRecord (the agent decides how many files its
// inbox and workdir proposal list), the report without those lists — the
// gate and `fedmem audit` read no larger record, and a record they cannot
// read loses its read receipt. Past the bound even then, the receipt's
// list is cut (truncated: count and digest still cover every read).
func recordOf(rep *Report) any {
	if b, err := json.MarshalIndent(rep, "", "  "); err != nil || len(b) <= vault.MaxSessionRecord {
		return rep
	}
	r := *rep
	r.InboxFiles, r.InboxTruncated = nil, true
	r.Warnings = append(append([]string{}, rep.Warnings...), "the session record leaves out inbox_files and the proposal's file lists (too large for a record): the session report has them")
	if rep.Proposal != nil {
		p := *rep.Proposal
		p.Files, p.Flagged, p.Skipped, p.Uncommitted = nil, nil, nil, nil
		r.Proposal = &p
	}
	if rep.VaultReads != nil {
		rr := *rep.VaultReads
		r.VaultReads = &rr
		for {
			b, err := json.MarshalIndent(&r, "", "  ")
			if err != nil || len(b) <= vault.MaxSessionRecord || len(rr.Reads) == 0 {
				break
			}
			rr.Reads, rr.Truncated = rr.Reads[:len(rr.Reads)/2], true
		}
	}
	return &r
}

// recordBytes is the session record's text (recordOf), the report
// encoded once when it fits, as it does at the start.
func recordBytes(rep *Report) ([]byte, error) {
	if b, err := json.MarshalIndent(rep, "", "  "); err == nil && len(b) <= vault.MaxSessionRecord {
		return b, nil
	}
	return json.MarshalIndent(recordOf(rep), "", "  ")
}

// writeRecordBytes writes b (and a newline) as dir/name: a fresh
// O_EXCL|O_NOFOLLOW file renamed over the name.
func writeRecordBytes(dir, name string, b []byte) error {
	dfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", dir, err)
	}
	defer unix.Close(dfd)
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return err
	}
	tmp := ".tmp-" + hex.EncodeToString(rnd[:])
	fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return fmt.Errorf("create %s/%s: %w", dir, tmp, err)
	}
	f := os.NewFile(uintptr(fd), tmp)
	_, werr := f.Write(append(b, '\n'))
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = unix.Renameat(dfd, tmp, dfd, name)
	}
	if werr != nil {
		_ = unix.Unlinkat(dfd, tmp, 0)
		return fmt.Errorf("write %s/%s: %w", dir, name, werr)
	}
	return nil
}

// listInbox lists what the agent left in its inbox, without following links
// and bounded in count.
func listInbox(inbox string) ([]InboxFile, bool) {
	const max = 10000
	var out []InboxFile
	truncated := false
	_ = filepath.WalkDir(inbox, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == inbox {
			return nil
		}
		if len(out) >= max {
			truncated = true
			return filepath.SkipAll
		}
		rel, _ := filepath.Rel(inbox, p)
		f := InboxFile{Path: rel, Type: "file"}
		if info, err := d.Info(); err == nil {
			f.Size = info.Size()
			switch m := info.Mode(); {
			case m.IsDir():
				f.Type = "dir"
			case m&fs.ModeSymlink != 0:
				f.Type = "symlink"
			case !m.IsRegular():
				f.Type = "special"
			}
		}
		out = append(out, f)
		return nil
	})
	return out, truncated
}
