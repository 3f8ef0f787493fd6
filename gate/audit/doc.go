// Package audit is the gate's append-only, hash-chained log: one JSON object
// per line, each carrying the SHA-256 of the previous entry, plus a head file
// holding the last sequence number and hash.
//
// It promises: Verify detects an entry that was changed, removed, inserted or
// reordered, and a log truncated behind the head file's back; Open refuses
// to continue a log that does not reach its head (ErrCut). Someone who can
// write the gate's state directory can rewrite the chain and the head
// together; VerifyAnchored catches that against heads recorded outside it
// (the Fedmem-Audit-Head trailer of gate commits). Files are opened relative
// to the verified directory, never through a link.
package audit
