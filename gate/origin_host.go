package gate

import (
	"github.com/fedmem/fedmem/gate/origin"
	"github.com/fedmem/fedmem/gate/policy"
)

// originOf is what the gate proved about session sess's record
// (origin.Of), with the gate's own uid as an owner the record folder may
// have.
func (g *Gate) originOf(in *inbox, pol *policy.Policy, sess string) origin.Origin {
	return origin.Of(in, pol, sess, g.uid)
}
