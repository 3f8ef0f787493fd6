// Package vault describes the layout of a fedmem memory vault: its folders,
// the agent inbox, session records and a read-only view of its Git HEAD.
//
// This package is linked by both halves of fedmem, so it must stay small and
// must not import go-git or anything of the gate: the untrusted-side launcher
// (fedmem-run) uses it to find the inbox and to read HEAD for its report.
// Writing the repository (init, commits) lives in vault/repo, which only the
// trusted side links.
package vault
