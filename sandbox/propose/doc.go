// Package propose turns a proposed workdir's writes (profile `workdir:
// propose`) into what the user applies after the session: the agent wrote
// into an overlay's upper layer, nothing reached the real tree, and Make
// reads that layer (through the tmpfs descriptor the sandbox hands back)
// into a commit on a branch of the workdir's repository, or a patch
// outside Git.
//
// Promises:
//   - Make never touches the workdir, its index or its work tree: the
//     branch is written with plumbing into the repository's objects and
//     one new ref, under an environment that runs none of the
//     repository's hooks or filters;
//   - every proposed path that runs code later (the persistence families
//     of mounts/families, instruction files, anything under a .git, a
//     program put on the caller's PATH) is flagged, and files under a .git
//     are never applied;
//   - on any failure the agent's files are kept as written, and Error
//     says where.
//
// It takes plain data (descriptor, paths, environment) and reads no
// profile: sandbox/launch calls it after the session.
package propose
