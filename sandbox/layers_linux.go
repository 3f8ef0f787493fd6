package sandbox

import (
	"errors"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/sandbox/seccomp"
)

// applyLandlock is filled in when the Landlock layer lands.
func applyLandlock(cfg *initConfig, l *Layers) error {
	if cfg.RequireLandlock {
		return errors.New("landlock layer not built yet")
	}
	return nil
}

// applySeccomp installs the deny-list filter on every thread. It is the
// last step before the agent is forked: the filter forbids the mount
// family, namespaces and ptrace to everything that follows.
func applySeccomp(cfg *initConfig, l *Layers) error {
	if err := seccomp.Apply(); err != nil {
		return err
	}
	l.Seccomp = true
	return nil
}

func describeFilters(pl *mounts.Plan) []string {
	out := []string{"seccomp: deny-list filter on every thread:"}
	for _, d := range seccomp.Describe() {
		out = append(out, "  "+d)
	}
	return out
}
