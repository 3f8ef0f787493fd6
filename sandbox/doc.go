// Package sandbox runs one command inside a sandbox realised from a
// mounts.Plan. The Backend interface is what fedmem-run talks to; the
// namespace backend (this package, Linux only) builds the sandbox with user,
// mount, pid, ipc, uts and cgroup namespaces through x/sys/unix, re-executing
// fedmem-run as the sandbox's pid 1 (see InitArg0).
//
// Promises:
//   - the agent starts only after the live mount table has been verified
//     against the plan (fail closed, exit 125);
//   - the agent holds no capability in any set, has no_new_privs, a seccomp
//     filter and, where the kernel has it, a Landlock domain;
//   - no file descriptor but stdio reaches the agent;
//   - the agent's exit code, or 128+signal, is what Run reports.
//
// Two processes run this package's code: fedmem-run (the parent: the
// backends and the watch of a session, which hand the placeholders' guard
// to sandbox/guard and the inbox cap to sandbox/inboxcap) and the
// sandbox's pid 1, fedmem-run re-executed as InitArg0 (the root's build
// and verification, the layers, the agent's fork and reaping; and the
// user-namespace holder it becomes under userns-hold). The init's code is
// package sandbox/pid1, which imports this one for what both run (the
// wire protocol in protocol.go, MountError, the no-link opens, the
// Landlock rules); this package never imports it. test/boundary
// TestPid1CodeApart checks that nothing here runs only in the init.
package sandbox
