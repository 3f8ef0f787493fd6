// Package readers answers "who read it": from the read receipts in the
// session records fedmem-run writes (90-inbox/.sessions/) and the copies
// the gate stores in its state (sessions/), which sessions opened a note,
// and what one session read and wrote. It reads files only; it never
// links a sandbox backend.
package readers
