//go:build !linux

package origin

import (
	"github.com/fedmem/fedmem/gate/policy"

	"github.com/fedmem/fedmem/gate/intake"
)

// Of proves nothing where the gate does not run (not Linux).
func Of(in *intake.Inbox, pol *policy.Policy, sess string, gateUID int) Origin {
	return Origin{Why: "session records are only checked on Linux"}
}
