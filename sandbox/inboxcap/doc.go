// Package inboxcap enforces limits.inbox_bytes from fedmem-run, outside the
// sandbox: Watch counts what the session's inbox holds (every inode once,
// the larger of its apparent size and its allocated blocks), driven by
// inotify with a periodic full walk as a backstop, and reports, once, the
// moment the inbox holds more than the limit, more than a bounded number
// of entries, or an entry it cannot inspect (fail closed: what it cannot
// see it cannot count). It opens nothing through a link. Linux only.
package inboxcap
