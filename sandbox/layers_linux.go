package sandbox

import (
	"strconv"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/sandbox/landlock"
	"github.com/fedmem/fedmem/sandbox/seccomp"
)

// LandlockRules derives the Landlock rules from the plan: the whole tree
// read-only, the plan's writable paths writable, a few devices usable.
// Paths are those of the sandbox's own root (call after pivot_root).
//
// Landlock grants by hierarchy and cannot subtract: when a writable path
// contains the vault, Landlock alone would let the vault be written, and
// the read-only mount (verified before exec) is what protects it; the plan
// warns about that layout.
func LandlockRules(pl *mounts.Plan) landlock.Rules {
	return landlock.Rules{
		ReadOnly:       []string{"/"},
		ReadWrite:      pl.Writable,
		ReadWriteFiles: []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"},
		Devices:        []string{"/dev/tty", "/dev/pts", "/dev/ptmx"},
		NetworkNone:    pl.Network == mounts.NetworkNone,
		// From ABI 9 Landlock refuses connect(2) to a pathname socket
		// whose server is outside the sandbox unless a rule grants it:
		// the listed ones, nothing else (bound after the start-time scan
		// or not).
		UnixSockets: pl.UnixSockets,
	}
}

func describeFilters(pl *mounts.Plan) []string {
	out := []string{"seccomp: deny-list filter on every thread:"}
	for _, d := range seccomp.Describe(pl.SocketFamilies...) {
		out = append(out, "  "+d)
	}
	abi := landlock.ABI()
	if abi == 0 {
		return append(out, "landlock: not available on this kernel")
	}
	r := LandlockRules(pl)
	out = append(out, "landlock (kernel ABI "+strconv.Itoa(abi)+"): read-only / ; writable:")
	for _, w := range r.ReadWrite {
		out = append(out, "  "+w)
	}
	return append(out, "  abstract unix sockets and signals scoped to the sandbox")
}
