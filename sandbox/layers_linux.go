package sandbox

import (
	"errors"

	"github.com/fedmem/fedmem/mounts"
)

// applyLandlock and applySeccomp are filled in by the layer packages.
func applyLandlock(cfg *initConfig, l *Layers) error {
	if cfg.RequireLandlock {
		return errors.New("landlock layer not built yet")
	}
	return nil
}

func applySeccomp(cfg *initConfig, l *Layers) error {
	if cfg.RequireSeccomp {
		return errors.New("seccomp layer not built yet")
	}
	return nil
}

func describeFilters(pl *mounts.Plan) []string { return nil }
