// Package guard is fedmem-run's host-side half of guarantee 6 (nothing the
// agent writes runs later outside the sandbox), around the whole session:
// before it, the mount points of the protected names that do not exist yet
// are made and their directories held with a shared flock(2); after it,
// the placeholders no other session still holds are removed, the names
// that appeared and would run code (a planted .git/commondir, a name the
// user's configuration runs) are moved aside, and every Git repository
// born or changed in a writable path during the session is swept
// (quarantine of what would run code on the user's next git command).
//
// Promises:
//   - everything after the session is done through directories opened
//     before it, never by path, and without following a link;
//   - a name is moved aside, never deleted, and reported as an event;
//   - it reads the Plan and reports events; nothing of the sandbox's own
//     code (the backends, the init) is in it, and the sandbox's pid 1
//     never runs it.
//
// It is Linux only (the backends are).
package guard
