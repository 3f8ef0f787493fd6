// Package repo writes a fedmem vault's Git repository on the trusted side:
// `fedmem init` creates (or re-checks and repairs) a vault with Init.
//
// It promises:
//   - a new vault has every folder of vault.Folders, the contract files
//     (00-global/AGENT.md, RULES.md, policy.yaml), a .gitignore that keeps
//     drafts out of history, and one commit by the gate identity on branch
//     main; `git fsck --strict` accepts it and `git status` is clean;
//   - every path is owned by the gate user; files are 0644, folders 0755,
//     nothing under .git is writable by group or others; 90-inbox/ and
//     90-inbox/.sessions/ let agents create their own entries but not remove
//     or rename anyone else's (sticky bit);
//   - Init on an existing vault makes no commit unless a contract file is
//     missing from the history, and reports each repair it made;
//   - Init refuses a non-empty directory that is not a vault, and refuses to
//     adopt inbox entries that someone other than the gate created;
//   - it never follows a symbolic link when it changes owner or mode.
//
// It is also fedmem's one Git layer (issue 20): the only package of the
// module that imports go-git (test/boundary checks it). Open gives the
// gate a Repo that reads commits and raw trees, edits trees as bytes,
// writes commits (signed through a Signer), moves branches by
// compare-and-swap with Git's lock-file protocol (its intent recorded
// first, so a killed writer's lock is removed at the next Open), updates
// the split index under index.lock, groups a pass's commits into one pack
// of its own (batch.go, pack.go), and fetches and pushes a remote branch.
// Every write stays `git fsck --strict` clean.
//
// Only the trusted side (cmd/fedmem, the gate) may import it; the
// untrusted-side launcher cmd/fedmem-run must not.
package repo
