// Package seccomp holds fedmem's seccomp deny-list and installs it.
//
// What it promises:
//
//   - The filter is plain Go data ([Rules]): every entry names its system
//     calls, an optional condition on one argument, the errno returned, and
//     why it is there. [Describe] renders it for `fedmem-run --explain`, and
//     docs/seccomp.md carries the same table (a test keeps them equal).
//   - [Assemble] turns the rules into a classic BPF program for one
//     architecture (x86_64 or aarch64). Nothing in that step touches the
//     system, so it is tested in a BPF interpreter on any platform.
//   - The program first checks seccomp_data.arch: a system call made through
//     any other ABI (i386 via int 0x80 on x86_64, arm32 compat on arm64) kills
//     the process, because the deny-list is written in native syscall numbers
//     and a foreign ABI would walk straight past it. On x86_64 every x32 call
//     (nr has bit 30 set) gets ENOSYS for the same reason.
//   - Argument conditions compare only the low 32 bits of an argument, which
//     is what the kernel itself uses for the filtered calls (clone flags are
//     lower_32_bits(), an ioctl cmd is an unsigned int): a caller cannot dodge
//     a rule by setting high bits (the flatpak TIOCSTI bypass, CVE-2019-10063).
//   - [Apply] (Linux) installs the filter on every thread of the process with
//     SECCOMP_FILTER_FLAG_TSYNC. It requires no_new_privs to be set already
//     and fails with [ErrNoNewPrivs] otherwise; it never sets it itself, so the
//     order of the sandbox's hardening steps stays visible in the init.
//   - [AssembleNotify] and [ApplyNotify] are the same filter with its EPERM
//     refusals and, optionally, the file system's write calls ([WriteCalls]) handed to a
//     user-notification listener that the sandbox's pid 1 serves
//     ([Listener]): a refusal is answered with the errno the filter itself
//     computes from the kernel's seccomp_data ([Decider]), a write call with
//     SECCOMP_USER_NOTIF_FLAG_CONTINUE. What the listener reads from the
//     caller's memory (the paths) only ever feeds a report, never an answer.
//
// Everything not listed is allowed: this is a deny-list that removes the
// kernel interfaces which could undo the sandbox or widen the kernel attack
// surface, on top of dropped capabilities and no_new_privs.
package seccomp
