// Package ctrd runs one OCI bundle (written by sandbox.Containerd from the
// sandbox/oci translation) on a containerd daemon through containerd/v2's
// Go client. It is the body of the cmd/fedmem-containerd helper: the
// client pulls in gRPC and net/http, which fedmem-run must not link
// (test/boundary), so fedmem-run execs the helper, as it does fedmem-runc.
//
// Promises:
//   - every container, task and snapshot it makes lives in the containerd
//     namespace it is given (fedmem) and carries the fedmem.owner label;
//     they are deleted when the session ends, when fedmem-run dies (the
//     control pipe's end of file) and, for a helper killed outright, by the
//     next run or `fedmem-containerd gc`;
//   - the root is the host's / cloned recursively read-only, or a fresh
//     snapshot of an image from the local content store, mounted read-only;
//   - the descriptors fedmem-run hands over reach fedmem's init through a
//     unix socket it connects to first (containerd gives a task only its
//     stdio), unlinked once used, before the agent exists.
package ctrd
