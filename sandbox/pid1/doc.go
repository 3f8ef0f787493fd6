// Package pid1 is the sandbox's pid 1: fedmem-run re-executed as
// sandbox.InitArg0 (the namespace backend's clone, or a container
// runtime's process under fedmem-runc / fedmem-containerd). fedmem-run's
// main calls InitMain, before parsing any flag, when os.Args[0] is
// sandbox.InitArg0; it builds and verifies the root, puts the layers in
// place, forks the agent and reaps it, or, under userns-hold, only holds a
// user namespace. In a container whose runtime cannot hand descriptors
// (argv: InitArg0, oci, fds-socket) this package's init() receives them
// first and puts them at 3, 4… before main runs.
//
// Only the init runs this package: nothing but cmd/fedmem-run imports it,
// and it uses package sandbox for what both sides share (the wire
// protocol in sandbox/protocol.go, MountError, the no-link opens, the
// Landlock rules). package sandbox never imports it. test/boundary
// TestPid1CodeApart checks both on the call graph.
package pid1
