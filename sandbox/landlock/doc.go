// Package landlock confines the sandbox init — and so the agent it execs —
// with a Landlock domain: the second filesystem layer under the read-only
// bind mounts, plus TCP and IPC scoping where the kernel offers them.
//
// What it promises:
//
//   - [Apply] restricts every thread of the calling process (go-landlock
//     uses LANDLOCK_RESTRICT_SELF_TSYNC on ABI ≥ 8 and psx /
//     syscall.AllThreadsSyscall below that) and sets no_new_privs on all
//     threads as Landlock requires. The domain is inherited across fork and
//     execve and can only ever be narrowed.
//   - Filesystem: [Rules.ReadOnly] hierarchies may be read, listed and
//     executed; [Rules.ReadWrite] hierarchies get every right, including
//     moving and linking files between them (refer, ABI ≥ 2);
//     [Rules.ReadWriteFiles] are single files (device nodes among them may
//     also be ioctl'd, ABI ≥ 5); [Rules.Devices] are hierarchies of device
//     nodes that may be opened read-write and ioctl'd. Everything else is
//     denied with EACCES, for root too.
//   - Unix sockets: from ABI 9, connecting to a pathname unix socket whose
//     server is outside the domain is denied unless it is in
//     [Rules.UnixSockets].
//   - Network: with [Rules.NetworkNone], TCP bind and connect are denied
//     (ABI ≥ 4; UDP too on ABI ≥ 10).
//   - IPC: abstract unix sockets and signals to processes outside the domain
//     are denied (ABI ≥ 6): with a shared network namespace the agent could
//     otherwise reach host services listening on abstract sockets.
//   - Best effort: on an older kernel the strongest subset it supports is
//     enforced and [Status] says exactly which; without Landlock, Apply
//     returns Status{ABI: 0} and no error — the caller decides (profile
//     `require: [landlock]`).
//   - A path that does not exist is skipped, never an error, and listed in
//     [Status.Skipped].
//
// Landlock does not cover chmod, chown, utime(s), xattrs, or any change made
// through an fd opened before Apply; the read-only mounts are the primary
// guard for the vault, Landlock the second. See docs/seccomp.md.
package landlock
