package gate

import (
	"github.com/fedmem/fedmem/gate/origin"
	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/gate/readers"
)

// storeSessionReceipts keeps the ended sessions' proven records with their
// read receipts in the gate's state and audit log (readers.Store).
func (g *Gate) storeSessionReceipts(in *inbox, pol *policy.Policy) (int, []string) {
	return readers.Store(in, g.state, func(sess string) origin.Origin { return g.originOf(in, pol, sess) },
		func(kind string, data map[string]any) error { _, err := g.audit.Append(kind, data); return err })
}
