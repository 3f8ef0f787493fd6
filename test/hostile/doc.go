// Command hostile is the hostile agent of fedmem's escape suite. Run inside
// fedmem-run, it tries every route its authors know to change the vault, read
// masked secrets, see other sessions, or undo the sandbox's layers, and it
// prints one JSON line per attempt:
//
//	{"attempt":"write","target":"/v/10-projects/note.md","ok":false,"errno":"EROFS","err":"..."}
//
// "ok" is true when the operation succeeded. For attack attempts that is an
// escape; for attempts marked "positive" (drafts in the inbox, files in the
// workdir and /tmp) it is the expected outcome. Checks of the process's own
// state (capabilities, no_new_privs, seccomp, open fds, visible sessions)
// report ok=true when the state is unsafe and put what they saw in "saw", so
// the test can verify the raw value itself.
//
// The program promises nothing about the vault: it is meant to break it. The
// test (package escape) decides what each result means. It always exits 0
// after its last attempt and prints a final {"attempt":"done"} line, so a
// crash half-way is visible as a missing line.
//
// Build it with CGO_ENABLED=0; it only works on Linux.
//
// The go:debug lines stop the Go runtime from opening cgroup files to size
// GOMAXPROCS (Go 1.25+): those descriptors would show up in the fd census
// as if the sandbox had leaked them.
//
//go:debug containermaxprocs=0
//go:debug updatemaxprocs=0
package main
