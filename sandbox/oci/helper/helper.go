// Package helper is what the runtime helpers (cmd/fedmem-runc,
// cmd/fedmem-containerd) share with fedmem-run beyond the bundle: a leaf
// package, so the helpers (and runc's re-exec of fedmem-runc as the
// container's "runc init", every session) do not link and initialise the
// plan and profile packages that the translation needs.
package helper

import (
	"os"
	"runtime/debug"
	"strconv"
)

// HostRoot as root.path asks the runc helper for a recursive read-only
// clone of the host's / as the container's root, made in the helper's own
// mount namespace.
const HostRoot = "fedmem:host-root"

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

// ModuleVersion is the version of module path linked into this binary
// ("unknown" without build information).
func ModuleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				if d.Replace != nil {
					d = d.Replace
				}
				return d.Version
			}
		}
	}
	return "unknown"
}
