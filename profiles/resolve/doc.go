// Package resolve turns what a caller asks for (a profile name or file, the
// vault, the workdir, command-line flags that may only tighten) into one
// checked session: the tightened profile, the agent's uid and home and the
// mounts.Plan. It is the pure half of the launcher, shared by fedmem-run
// (through sandbox/launch, which adds the sandbox.Spec and runs it),
// `fedmem-run --explain` and `fedmem profile explain`: the plan a security
// team reviews is the plan that runs.
//
// It reads the host (profiles, the vault's layout, $HOME, which secrets
// exist) but changes nothing on it, and it must not import package sandbox
// or its backends: cmd/fedmem, which hosts the gate, links it
// (test/boundary enforces it).
package resolve
