package sandbox

import (
	"errors"
	"strconv"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/sandbox/landlock"
	"github.com/fedmem/fedmem/sandbox/seccomp"
)

// landlockRules derives the Landlock rules from the plan: the whole tree
// read-only, the plan's writable paths writable, a few devices usable.
// Paths are those of the sandbox's own root (call after pivot_root).
//
// Landlock grants by hierarchy and cannot subtract: when a writable path
// contains the vault, Landlock alone would let the vault be written, and
// the read-only mount (verified before exec) is what protects it; the plan
// warns about that layout.
func landlockRules(pl *mounts.Plan) landlock.Rules {
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

// applyLandlock restricts every thread to the plan's rules and scopes
// abstract unix sockets and signals to the sandbox. It runs after the root
// is final: once applied, the kernel refuses this process further mounts.
func applyLandlock(cfg *initConfig, l *Layers) error {
	st, err := landlock.Apply(landlockRules(cfg.Plan))
	if err != nil {
		return err
	}
	l.Landlock, l.LandlockFS, l.LandlockNet, l.Scoped = st.ABI, st.FS, st.NetTCP, st.Scopes()
	if cfg.RequireLandlock && (st.ABI == 0 || !st.FS) {
		return errors.New("the profile requires landlock and this kernel does not enforce it (see `fedmem doctor`)")
	}
	return nil
}

// scopeThread puts the calling (forking) thread in a nested Landlock domain
// scoping signals and abstract sockets; see landlock.ScopeThread.
func scopeThread() (bool, error) { return landlock.ScopeThread() }

// applySeccomp installs the deny-list filter on every thread. It is the
// last step before the agent is forked: the filter forbids the mount
// family, namespaces and ptrace to everything that follows.
func applySeccomp(cfg *initConfig, l *Layers) error {
	if err := seccomp.Apply(cfg.Plan.SocketFamilies...); err != nil {
		return err
	}
	l.Seccomp = true
	return nil
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
	r := landlockRules(pl)
	out = append(out, "landlock (kernel ABI "+strconv.Itoa(abi)+"): read-only / ; writable:")
	for _, w := range r.ReadWrite {
		out = append(out, "  "+w)
	}
	return append(out, "  abstract unix sockets and signals scoped to the sandbox")
}
