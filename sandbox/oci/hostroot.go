package oci

import "github.com/fedmem/fedmem/sandbox/oci/helper"

// HostRoot as root.path asks the runc helper (cmd/fedmem-runc) for a
// recursive read-only clone of the host's / as the container's root, made
// in the helper's own mount namespace.
const HostRoot = helper.HostRoot

// InitDir is where the backends bind fedmem-run's own executable inside
// the container (read-only), under the name the init dispatches on: the
// runtimes exec Args[0] found in PATH with argv[0] = Args[0].
const InitDir = "/dev/.fedmem"
