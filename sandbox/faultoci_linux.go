package sandbox

import (
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/fedmem/fedmem/mounts"
)

// faultOCI is the container backends' half of FaultVaultWritable: in the
// fedmemfault build only, the translated spec binds the vault writable —
// the mistake the init's live verification must catch before any agent
// runs, whoever built the mounts. A no-op in release builds.
func faultOCI(s *specs.Spec, pl *mounts.Plan) {
	if !FaultVaultWritable {
		return
	}
	for i, m := range s.Mounts {
		if m.Destination == pl.Vault && m.Type == "bind" {
			s.Mounts[i].Options = []string{"rbind", "rw", "nosuid", "nodev"}
		}
	}
}
