package vault

import "path/filepath"

// SessionRecord is the enforcer's record of one session: what fedmem-run
// knows about it (profile, uid, command), stored in SessionsDir as
// <session>.json where the agent cannot reach it. The gate takes a draft's
// provenance from it, never from the draft. It is the one definition of the
// record: the launcher writes it (embedded in its session report, whose
// other fields the gate ignores) and the gate reads it. Fields are only ever
// added.
type SessionRecord struct {
	Session     string   `json:"session"`
	Profile     string   `json:"profile"`
	ProfileHash string   `json:"profile_hash"`
	UID         int      `json:"uid"`
	Command     []string `json:"command"`
	// Started is an RFC 3339 time in UTC (time.Time's JSON form).
	Started string `json:"started"`
	// Ended is an RFC 3339 time in UTC, written by the launcher when the
	// session ends (empty while it runs, or when the launcher could not
	// write it). The gate does not trust a draft changed after it.
	Ended string `json:"ended,omitempty"`
	// Workdir is the agent's working directory; VaultHeadStart the vault's
	// HEAD when the session started (what the agent could read). The
	// launcher writes its whole report as the record, whose fields of the
	// same names fill these (review show prints them).
	Workdir        string `json:"workdir,omitempty"`
	VaultHeadStart string `json:"vault_head_start,omitempty"`
	// VaultReadsDigest is the digest of the session's read receipt (the
	// report's vault_reads.digest: every vault file the agent opened and
	// its blob id at VaultHeadStart), written at the session's end; the
	// gate stores it with the session's claims.
	VaultReadsDigest string `json:"vault_reads_digest,omitempty"`
	// VaultReads is the read receipt itself (receipt.go), written at the
	// session's end: the vault files the agent opened.
	VaultReads *ReadReceipt `json:"vault_reads,omitempty"`
}

// MaxSessionRecord bounds a session record: what the gate and `fedmem audit`
// read of one (more is refused), and what fedmem-run writes (it leaves the
// agent-made lists out of a record that would be larger: the report keeps
// them).
const MaxSessionRecord = 1 << 20

// SessionRecordPath is where the record of session lives in the vault.
func SessionRecordPath(vaultDir, session string) string {
	return filepath.Join(vaultDir, SessionsDir, session+".json")
}
