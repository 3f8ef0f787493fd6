// Package audit is the gate's append-only, hash-chained log: one JSON object
// per line, each carrying the SHA-256 of the previous entry, plus a head file
// holding the last sequence number and hash.
//
// It promises: Verify detects an entry that was changed, removed, inserted or
// reordered, and a log truncated behind the head file's back. It does not
// stop someone who can write the gate's state directory from rewriting the
// whole chain and the head together; that directory belongs to the gate user
// alone, and commits in the vault carry the draft hashes independently.
package audit
