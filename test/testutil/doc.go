// Package testutil holds helpers for fedmem's integration suites: building
// the real binaries, creating real vaults (Git CLI), scratch directories that
// a sandbox can see, root-test gating, and filesystem snapshots whose Diff
// names every change in content or metadata.
//
// Nothing here mocks the kernel, Git or the filesystem: a Snapshot is lstat,
// readlink, llistxattr and sha256 of real files; a vault is made by `fedmem
// init` when that exists, else by `git init` and `git commit`.
package testutil
