package launch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/profiles/resolve"
	"github.com/fedmem/fedmem/vault"
)

// ensureGateState keeps the gate's state directory (vault.GateStateDir, a
// sibling of the vault) out of the agent's reach even when it does not
// exist yet. An existing one is masked by the plan. A missing one whose
// parent the agent may write (a workdir above the vault) would let the
// agent create it first, with its own content, for a gate of the same uid
// to adopt: fedmem-run creates it (mode 0700) when the caller owns the vault
// — it is the uid a single-user gate runs as — and reports created so the
// plan is rebuilt with its mask; otherwise it refuses (`fedmem init` makes
// it for a gate user).
func ensureGateState(s *resolve.Session) (created bool, err error) {
	if s.Placeholder {
		return false, nil
	}
	st := vault.GateStateDir(s.Vault)
	if _, err := os.Lstat(st); err == nil {
		return false, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("gate state directory %s: %w", st, err)
	}
	parent := filepath.Dir(st)
	reachable := false
	for _, w := range s.Plan.Writable {
		if vault.Within(parent, w) {
			reachable = true
		}
	}
	if !reachable {
		return false, nil
	}
	var vst unix.Stat_t
	if err := unix.Stat(s.Vault, &vst); err != nil {
		return false, fmt.Errorf("vault %s: %w", s.Vault, err)
	}
	if int(vst.Uid) != os.Geteuid() {
		return false, fmt.Errorf("the gate's state directory %s does not exist and the agent could create it (%s is writable in the sandbox): run `fedmem init %s` to create it for the gate, or choose a workdir that does not contain the vault's parent", st, parent, s.Vault)
	}
	if err := unix.Mkdir(st, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return false, fmt.Errorf("create the gate's state directory %s (to keep it from the agent): %w", st, err)
	}
	return true, nil
}
