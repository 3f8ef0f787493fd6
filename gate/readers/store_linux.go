package readers

import (
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/gate/durable"
	"github.com/fedmem/fedmem/gate/intake"
	"github.com/fedmem/fedmem/gate/origin"
	"github.com/fedmem/fedmem/vault"
)

// Store copies into the gate's state (state/sessions/ID.json) the
// record of every ended session whose record carries a read receipt, once
// each, and appends a "session" audit entry with the receipt's digest: the
// receipt then survives the record's removal or rewriting in
// 90-inbox/.sessions/ (fedmem audit readers reads both, and says when the
// two differ), and the hash chain holds its digest (audit). Only records
// proven to be the launcher's (originOf: written by root, or by the setgid
// launcher) are stored: any host user may write a record of their own. It
// returns how many it stored and what went wrong; cost: one stat per
// record, a read and a write per new one.
func Store(in *intake.Inbox, state string, originOf func(sess string) origin.Origin, audit func(kind string, data map[string]any) error) (stored int, problems []string) {
	fd, err := intake.OpenAt(in.FD(), ".sessions", unix.O_RDONLY|unix.O_DIRECTORY)
	if err != nil {
		return 0, nil // no records yet
	}
	dir := os.NewFile(uintptr(fd), ".sessions")
	names, err := dir.Readdirnames(-1)
	dir.Close()
	if err != nil {
		return 0, []string{"session records: " + err.Error()}
	}
	for _, n := range names {
		sess, ok := strings.CutSuffix(n, ".json")
		if !ok || strings.HasPrefix(sess, ".") {
			continue
		}
		dst := filepath.Join(state, vault.GateSessionsDir, n)
		if _, err := os.Lstat(dst); err == nil {
			continue
		}
		o := originOf(sess)
		r := o.Record
		if !o.Verified || r.Ended == "" || r.VaultReads == nil {
			continue // not the launcher's, still running, or no receipt
		}
		if rr := r.VaultReads; rr.Recorded && !rr.Truncated && vault.ReadsDigest(rr.Commit, vault.Paths(rr.Reads)) != r.VaultReadsDigest {
			problems = append(problems, "session "+sess+": its read receipt does not match its digest (not stored)")
			continue
		}
		if err := os.MkdirAll(filepath.Join(state, vault.GateSessionsDir), 0o700); err != nil {
			return stored, append(problems, err.Error())
		}
		if err := audit("session", map[string]any{"session": sess, "profile": r.Profile, "uid": r.UID,
			"started": r.Started, "ended": r.Ended, "vault_head_start": r.VaultHeadStart, "recorded": r.VaultReads.Recorded,
			"vault_reads": r.VaultReads.Count, "vault_reads_digest": r.VaultReadsDigest}); err != nil {
			return stored, append(problems, "audit: "+err.Error())
		}
		if err := durable.WriteJSON(dst, r); err != nil {
			return stored, append(problems, err.Error())
		}
		stored++
	}
	return stored, problems
}
