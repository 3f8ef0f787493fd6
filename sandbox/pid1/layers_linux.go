package pid1

import (
	"errors"

	"github.com/fedmem/fedmem/sandbox"
	"github.com/fedmem/fedmem/sandbox/landlock"
	"github.com/fedmem/fedmem/sandbox/seccomp"
)

// applyLandlock restricts every thread to the plan's rules and scopes
// abstract unix sockets and signals to the sandbox. It runs after the root
// is final: once applied, the kernel refuses this process further mounts.
func applyLandlock(cfg *sandbox.InitConfig, l *sandbox.Layers) error {
	st, err := landlock.Apply(sandbox.LandlockRules(cfg.Plan))
	if err != nil {
		return err
	}
	l.Landlock, l.LandlockFS, l.LandlockNet, l.Scoped = st.ABI, st.FS, st.NetTCP, st.Scopes()
	if cfg.RequireLandlock && (st.ABI == 0 || !st.FS) {
		return errors.New("the profile requires landlock and this kernel does not enforce it (see `fedmem doctor`)")
	}
	return nil
}

// applySeccomp installs the deny-list filter on every thread. It is the
// last step before the agent is forked: the filter forbids the mount
// family, namespaces and ptrace to everything that follows.
func applySeccomp(cfg *sandbox.InitConfig, l *sandbox.Layers) error {
	if err := seccomp.Apply(cfg.Plan.SocketFamilies...); err != nil {
		return err
	}
	l.Seccomp = true
	return nil
}

// scopeThread puts the calling (forking) thread in a nested Landlock domain
// scoping signals and abstract sockets; see landlock.ScopeThread.
func scopeThread() (bool, error) { return landlock.ScopeThread() }
