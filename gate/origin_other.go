//go:build !linux

package gate

import "github.com/fedmem/fedmem/gate/policy"

func (g *Gate) originOf(in *inbox, pol *policy.Policy, sess string) origin {
	return origin{Why: "session records are only checked on Linux"}
}
