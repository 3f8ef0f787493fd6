// Package launch is fedmem-run's session lifecycle: from an Options value
// (the command line, as data) to a resolved session (profile → tightened
// profile → mounts.Plan → sandbox.Spec), then the run itself — report and
// events files opened before the agent starts, the session inbox and the
// enforcer's session record, the network proxy, stdio, the backend, and
// the JSON report. cmd/fedmem-run only parses flags into Options; tests
// call Resolve and Run with buffers.
//
// Promises:
//   - a flag may only tighten the profile, and a profile that `fedmem
//     profile check` calls invalid is refused (exit 125, file, line, rule);
//   - fedmem-run never acts on a path the agent controls: the report and
//     events files are opened before the agent starts, relative to a
//     directory handle, without following a link, and written through the
//     kept descriptor only;
//   - the agent's environment is an exact allow list (see Env);
//   - the agent never holds the user's terminal outside PTY mode: stdio
//     that is a terminal (or not a file) is relayed through pipes, and the
//     run is refused if a pipe cannot be made.
//
// The pure half (profile, plan, explain) is package profiles/resolve, which
// cmd/fedmem may link; this package links the sandbox backend. It is the
// one package under sandbox/ that reads the profile: the session's
// credentials (sandbox/credentials) get plain Sources made from the
// profile's entries, and a proposed workdir's upper layer goes to
// sandbox/propose after the session.
package launch
