package oci

import (
	"os"
	"strconv"
)

// HostRoot as root.path asks the runc helper (cmd/fedmem-runc) for a
// recursive read-only clone of the host's / as the container's root, made
// in the helper's own mount namespace.
const HostRoot = "fedmem:host-root"

// InitDir is where the backends bind fedmem-run's own executable inside
// the container (read-only), under the name the init dispatches on: the
// runtimes exec Args[0] found in PATH with argv[0] = Args[0].
const InitDir = "/dev/.fedmem"

// ReportPid writes pid, in decimal, to the descriptor fd a helper was
// given with --pid-fd (fedmem-run's tmp_bytes watch reads the sandbox's
// /tmp through /proc/PID/root), then closes it; fd < 0: nothing asked.
func ReportPid(fd, pid int) {
	if fd < 0 {
		return
	}
	f := os.NewFile(uintptr(fd), "pid")
	_, _ = f.WriteString(strconv.Itoa(pid) + "\n")
	f.Close()
}
