// Package helper is what the runtime helpers (cmd/fedmem-runc,
// cmd/fedmem-containerd) share with fedmem-run beyond the bundle: a leaf
// package, so the helpers (and runc's re-exec of fedmem-runc as the
// container's "runc init", every session) do not link and initialise the
// plan and profile packages that the translation needs.
package helper

import (
	"flag"
	"os"
	"runtime/debug"
	"strconv"
)

// RunFlags are the flags of a helper's `run`, the same for every runtime
// helper: fedmem-run writes them (Args), the helper reads them (Register),
// so that the two sides of the protocol cannot drift apart.
type RunFlags struct {
	// Bundle is the bundle directory holding config.json.
	Bundle string
	// ID is the container's id.
	ID string
	// FDs descriptors from 3 on go to the container's process (fedmem's
	// init: config, sync, pty, proxy, proposal).
	FDs int
	// Control is the descriptor whose end of file (fedmem-run gone) or
	// any byte kills the container; -1: none.
	Control int
	// PidFd is the descriptor the helper writes the container's init's
	// pid to, then closes (ReportPid); -1: none.
	PidFd int
}

// Register defines the run flags on fs, filling f when fs is parsed.
func (f *RunFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Bundle, "bundle", "", "bundle directory holding config.json")
	fs.StringVar(&f.ID, "id", "", "container id")
	fs.IntVar(&f.FDs, "fds", 0, "descriptors from 3 on to hand to the container's process")
	fs.IntVar(&f.Control, "control", -1, "descriptor whose end of file (fedmem-run gone) or any byte kills the container")
	fs.IntVar(&f.PidFd, "pid-fd", -1, "descriptor to write the container's init's pid to, then close")
}

// Args are f as the helper's command line says it (after `run` and the
// helper's own flags).
func (f RunFlags) Args() []string {
	return []string{"--bundle", f.Bundle, "--id", f.ID,
		"--fds", strconv.Itoa(f.FDs), "--control", strconv.Itoa(f.Control), "--pid-fd", strconv.Itoa(f.PidFd)}
}

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
