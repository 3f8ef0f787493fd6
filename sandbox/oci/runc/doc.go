// Package runc runs one OCI bundle (written by sandbox.Runc from the
// sandbox/oci translation) through runc's libcontainer, as a library. It is
// the body of the cmd/fedmem-runc helper: libcontainer's nsexec needs cgo,
// and fedmem-run stays CGO_ENABLED=0 and never links it (test/boundary);
// fedmem-run execs the helper instead.
//
// Promises:
//   - the root is a detached, recursive, read-only clone of the host's /
//     (or the bundle's own rootfs), made inside the helper's private mount
//     namespace: nothing is mounted in the host's, so a killed helper leaves
//     no mount behind;
//   - the descriptors fedmem-run hands over (init config, sync pipe, pty and
//     proxy sockets) reach the container's process at the same numbers;
//   - the container's process dies with the helper (parent death signal),
//     and a container left by a killed helper is destroyed on the next run
//     (or by `fedmem-runc gc`).
package runc
