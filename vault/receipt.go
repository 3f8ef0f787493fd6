package vault

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxVaultReads bounds vault_reads.reads in the report and the session
// record; vault_reads.count and vault_reads.digest cover every read.
const MaxVaultReads = 2000

// MaxVaultReadBytes bounds the listed reads' paths, in bytes, so that a
// record stays under the 1 MiB its readers take.
const MaxVaultReadBytes = 256 << 10

// ReadReceipt is the session report's (and record's) vault_reads: which
// vault files the agent opened, recorded by fedmem-run from outside the
// sandbox (docs/report.md, docs/threat-model.md "Read
// receipts").
type ReadReceipt struct {
	// Recorded: the recorder marked the sandbox's vault mounts before the
	// agent started; false with Unavailable saying why.
	Recorded    bool   `json:"recorded"`
	Unavailable string `json:"unavailable,omitempty"`
	// Attribution says whose opens Reads holds: "sandbox" (only this
	// sandbox's: a root caller's mount marks) or "any-process" (every open
	// of a vault file on the host while the session ran, the agent's among
	// them: an unprivileged caller's inode marks; a host process's read
	// during the session is listed too — a maybe read, never a missed one).
	Attribution string `json:"attribution,omitempty"`
	// Commit is the vault HEAD the blob ids are read at (the session's
	// vault_head_start).
	Commit string `json:"commit,omitempty"`
	// Count is the number of distinct vault files opened (outside .git).
	Count int         `json:"count"`
	Reads []VaultRead `json:"reads"`
	// Truncated: Reads holds the first of Count only (MaxVaultReads
	// entries, MaxVaultReadBytes of paths).
	Truncated bool `json:"truncated,omitempty"`
	// Digest is sha256 over Commit and every path read (not only those
	// listed): "fedmem-reads-v1 LF commit LF", then the paths sorted, one
	// "path LF" each (a path at a commit names its blob). What the gate
	// stores with the session.
	Digest string `json:"digest,omitempty"`
	// GitOpens counts the files under .git opened (Git's objects and
	// refs: which notes a `git log -p` read is not known).
	GitOpens int `json:"git_opens,omitempty"`
	// Unattributed counts opens the recorder saw but could not name.
	Unattributed int `json:"unattributed,omitempty"`
	// Lost: the kernel's queue overflowed and some opens are missing.
	Lost bool `json:"lost,omitempty"`
	// ChangedDuring counts the listed reads whose note the gate changed
	// or removed between Commit and the session's end (a withhold, a
	// supersession, a promotion over it): the agent may have read either
	// version (the sandbox's vault is the live tree, read-only).
	ChangedDuring int `json:"changed_during,omitempty"`
}

// VaultRead is one vault file the agent opened.
type VaultRead struct {
	Path string `json:"path"`
	// Blob is the file's blob id at Commit; "" when the path is not in
	// that commit (a file the gate added during the session, an
	// untracked file).
	Blob string `json:"blob,omitempty"`
	// First is when the recorder first saw it opened (RFC 3339, UTC).
	First string `json:"first"`
	// EndBlob, when the gate committed during the session and the file
	// differs at the session's end (vault_head_end): its blob id there,
	// "" with Removed when it is gone.
	EndBlob string `json:"end_blob,omitempty"`
	Removed bool   `json:"removed_by_end,omitempty"`
}

// ReadPath is a path read as a receipt holds it: as it is, or Go-quoted
// when it is not UTF-8 (JSON would turn its bytes into U+FFFD, and the
// stored record would no longer match its digest), holds a newline or a
// carriage return (the digest's separator), or starts with a quote (red
// team rtview: TestRTViewReceiptOddName).
func ReadPath(p string) string {
	if !utf8.ValidString(p) || strings.ContainsAny(p, "\n\r") || strings.HasPrefix(p, `"`) {
		return strconv.Quote(p)
	}
	return p
}

// ReadsDigest is ReadReceipt.Digest of paths read at commit. A grep of
// a large vault reads 100k paths: they are sorted and hashed in large
// writes, not formatted one by one.
func ReadsDigest(commit string, paths []string) string {
	s := slices.Clone(paths)
	slices.Sort(s)
	h := sha256.New()
	buf := make([]byte, 0, 64<<10)
	buf = append(append(append(buf, "fedmem-reads-v1\n"...), commit...), '\n')
	for _, p := range s {
		if len(buf)+len(p)+1 > cap(buf) {
			h.Write(buf)
			buf = buf[:0]
		}
		buf = append(append(buf, p...), '\n')
	}
	h.Write(buf)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// Paths are the paths of reads.
func Paths(reads []VaultRead) []string {
	out := make([]string, len(reads))
	for i, r := range reads {
		out[i] = r.Path
	}
	return out
}

// The ReadReceipt Attribution values (the recorder's, sandbox/receipts).
const (
	AttributionSandbox    = "sandbox"
	AttributionAnyProcess = "any-process"
)
