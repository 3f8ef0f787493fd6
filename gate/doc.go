// Package gate is the trusted half of fedmem: it claims drafts from the
// vault's inbox, validates them, decides (promote, hold for review, reject),
// commits promotions with Git plumbing, writes receipts for agents and keeps
// an audit log.
//
// It promises:
//   - a draft is read once, through a file descriptor that never followed a
//     link, never blocked on a FIFO, and belonged to a regular file with one
//     link and a size under the policy cap checked before reading; every later
//     step works on those bytes;
//   - the draft is first moved (rename) out of the inbox into the gate's state
//     directory, which no sandbox sees; from then on the agent cannot swap it;
//   - every claimed draft ends in exactly one recorded decision (promoted,
//     pending, rejected) in the state directory, across crashes: a claim
//     interrupted at any point is finished on the next pass, and a promotion
//     is never committed twice;
//   - a draft with a secret or any invalid content never reaches a Git object;
//   - the destination path and every provenance field come from the gate
//     (policy, session record, clock), never from the draft; what the draft
//     says about status, verification or generation is kept only under
//     `claimed:`;
//   - a promotion is one commit by the gate identity, written as blobs, the
//     trees on the changed path and a commit object, published by a
//     compare-and-swap of the branch ref using Git's lock-file protocol; the
//     checked-out file and its index entry are then updated so the work tree
//     stays clean;
//   - receipts are written for agents to read and are never read back.
//
// Linux only for claiming (openat2); the decision logic builds everywhere.
package gate
