// Package oci translates a mounts.Plan and a session's settings into one
// OCI runtime spec (opencontainers/runtime-spec types), the single source
// the container backends (runc's libcontainer in cmd/fedmem-runc, the
// containerd client in cmd/fedmem-containerd) run from.
//
// Promises:
//   - Translate is pure: it reads its Input and touches nothing on the
//     system; the same Input always gives the same spec;
//   - mounts appear in Plan order, each with the flags its kind demands
//     (read-only binds are recursive, "rro"); procfs paths the runtimes
//     forbid as mount targets become maskedPaths/readonlyPaths;
//   - the process in the spec is fedmem's own init (InitArgs), which
//     verifies the live mount table against the Plan and applies
//     Landlock, the seccomp filter and the private pty before it forks the
//     agent; the capabilities the spec grants are the init's, which it
//     drops in every set before the agent starts;
//   - noNewPrivileges is always set, the seccomp section is
//     sandbox/seccomp's rules (seccomp.OCI), and a Plan kind the
//     translation does not know is an error, never skipped.
package oci
