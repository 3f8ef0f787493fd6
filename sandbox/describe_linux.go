package sandbox

import (
	"net"
	"os"
	"strconv"
	"time"

	"github.com/fedmem/fedmem/sandbox/cgroups"
)

// describer is a backend that says what it enforces, and by whom.
type describer interface{ Describe() []string }

// DescribeBackend says, for --explain, which backend would build the
// sandbox, which of its pieces enforces what, and, for a container
// backend, what is missing on this machine (a run would be refused).
func DescribeBackend(b Backend) []string {
	if d, ok := b.(describer); ok {
		return d.Describe()
	}
	return []string{"backend: " + b.Name()}
}

// initEnforces is what fedmem's own init does in every backend.
const initEnforces = "fedmem's init (the sandbox's pid 1): verifies every mount against the plan (fail closed), sets no_new_privs, applies Landlock and the seccomp filter (fedmem's rules, sandbox/seccomp), drops every capability, sets the rlimits (file_size, open_files) and relays the private PTY"

// Describe implements describer.
func (Namespace) Describe() []string {
	return []string{
		"backend: namespace (the default): fedmem-run itself makes the namespaces (clone3), builds the root and makes the session cgroup (pids, memory, cpu)",
		initEnforces,
		cgroups.System().CPUShare(),
	}
}

// ociEnforces is what a container runtime does from the sandbox/oci
// translation of the plan.
func ociEnforces(who string) string {
	return who + ": the namespaces, the root, the plan's mounts in order, masked and read-only paths, the user namespace's id maps and the container's cgroup (limits.pids, memory, cpu as OCI linux.resources)"
}

// containerMissing is what keeps any container backend from running here.
func containerMissing(name string) []string {
	if os.Geteuid() != 0 {
		return []string{"MISSING: the " + name + " backend needs root (uid " + strconv.Itoa(os.Geteuid()) + "): a run would be refused"}
	}
	return nil
}

// enforced is who enforces what in a runc sandbox (--explain, and the
// report's layers.enforced_by).
func (r Runc) enforced() []string {
	return []string{
		"backend: runc: runc's libcontainer, as a library in the fedmem-runc helper (cgo; cgroupfs manager, cgroup v1 or v2), with the host's / as a read-only clone for the root",
		ociEnforces("libcontainer"),
		initEnforces + "; the runtime's own OCI seccomp (the same rules, seccomp.OCI) is not installed: it would forbid the init's last mount fix-up",
	}
}

// Describe implements describer.
func (r Runc) Describe() []string {
	out := r.enforced()
	if p, err := helperPath(r.Helper, "fedmem-runc"); err != nil {
		out = append(out, "MISSING: fedmem-runc not beside fedmem-run nor in PATH ("+err.Error()+"): a run would be refused")
	} else {
		out = append(out, "helper: "+p)
	}
	return append(out, containerMissing("runc")...)
}

// enforced is who enforces what in a containerd sandbox.
func (c Containerd) enforced() []string {
	addr := c.address()
	root := "the host's / as a read-only clone"
	if c.Image != "" {
		root = "image " + c.Image + " (containerd namespace " + ContainerdNamespace + ", local content store)"
	}
	return []string{
		"backend: containerd: the daemon at " + addr + " (namespace " + ContainerdNamespace + "), through its Go client in the fedmem-containerd helper; its shim runs runc; root: " + root,
		ociEnforces("runc under containerd's shim"),
		initEnforces + "; the runtime's own OCI seccomp (the same rules, seccomp.OCI) is not installed: it would forbid the init's last mount fix-up",
	}
}

// Describe implements describer.
func (c Containerd) Describe() []string {
	addr := c.address()
	out := c.enforced()
	if p, err := helperPath(c.Helper, "fedmem-containerd"); err != nil {
		out = append(out, "MISSING: fedmem-containerd not beside fedmem-run nor in PATH ("+err.Error()+"): a run would be refused")
	} else {
		out = append(out, "helper: "+p)
	}
	// A connection is all we can try without gRPC (fedmem-run does not
	// link it): `fedmem doctor` asks the daemon for its version.
	if conn, err := net.DialTimeout("unix", addr, 2*time.Second); err != nil {
		out = append(out, "MISSING: nothing answers at "+addr+" ("+err.Error()+"): a run would fail to connect")
	} else {
		conn.Close()
		out = append(out, "daemon socket: "+addr+" accepts connections")
	}
	return append(out, containerMissing("containerd")...)
}
