// Package escape is fedmem's escape suite: it runs the hostile agent
// (test/hostile) inside the real fedmem-run, in every vault layout the
// design names — vault beside the workdir, vault inside the writable workdir,
// workdir inside the vault, started by root, started by an unprivileged user
// with the vault owned by a separate gate uid, and by a user who owns the
// vault (so file permissions stop nothing) — and proves guarantee 1:
// every attack fails with an errno from a known set, the legitimate writes
// (inbox, workdir, /tmp) succeed, and every file and directory of the vault
// outside the session's inbox, .git included, is unchanged in content and
// metadata. Tests named after CVEs re-try known container escapes.
//
// The suite needs root (it creates users' files, runs setpriv and tmux); it
// skips without root unless FEDMEM_REQUIRE_ROOT=1, in which case it fails.
// It has no non-test code.
//
// FEDMEM_BACKEND=runc|containerd runs it under a container backend (make
// test-matrix): the same expectations; the layouts whose caller is an
// unprivileged user skip there by name, since those backends refuse such a
// caller (TestContainerBackendRefusesUnprivilegedCaller).
package escape
