//go:build !linux

package gate

import (
	"github.com/fedmem/fedmem/gate/policy"

	"github.com/fedmem/fedmem/gate/decide"
)

func (g *Gate) originOf(in *inbox, pol *policy.Policy, sess string) decide.Origin {
	return decide.Origin{Why: "session records are only checked on Linux"}
}
