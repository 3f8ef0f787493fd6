package sign

import (
	"fmt"

	"github.com/fedmem/fedmem/gate/audit"
	"github.com/fedmem/fedmem/gate/trailer"
	"github.com/fedmem/fedmem/vault"
	"github.com/fedmem/fedmem/vault/repo"
)

// AuditHeadTrailer is the trailer in which a gate commit records the audit
// log's head at commit time ((*audit.Log).Head), anchoring the log's end
// outside the gate's state directory.
const AuditHeadTrailer = trailer.AuditHead

// History is what `fedmem audit verify` learns from the vault's Git history:
// the audit heads gate commits anchored, and the state of their signatures.
// Fields are only ever added.
type History struct {
	// GateCommits counts commits carrying Fedmem-* trailers.
	GateCommits int `json:"gate_commits"`
	// Anchors are the Fedmem-Audit-Head values found, newest first.
	Anchors []audit.Anchor `json:"-"`
	// Signed and Unsigned count gate commits with and without a signature.
	Signed   int `json:"signed"`
	Unsigned int `json:"unsigned"`
	// Checked is true when signatures were checked against a public key;
	// Bad lists the gate commits whose signature is missing or wrong then.
	Checked bool     `json:"signatures_checked"`
	Bad     []string `json:"bad_signatures,omitempty"`
}

// ReadHistory walks every commit reachable from the vault's HEAD. With a
// verifier, every gate commit must carry a signature that verifies with its
// key; without one, signatures are only counted.
func ReadHistory(vaultDir string, v *Verifier) (*History, error) {
	dir, err := vault.Resolve(vaultDir)
	if err != nil {
		return nil, err
	}
	h := &History{Checked: v != nil}
	err = repo.Log(dir, func(c *repo.Commit) error {
		if !trailer.IsGate(c.Message) {
			return nil
		}
		h.GateCommits++
		short := c.Hash.String()[:12]
		if head := trailer.Value(c.Message, AuditHeadTrailer); head != "" {
			h.Anchors = append(h.Anchors, audit.Anchor{Head: head, Source: "commit " + short})
		}
		if c.PGPSignature == "" {
			h.Unsigned++
		} else {
			h.Signed++
		}
		if v != nil {
			if err := v.VerifyCommit(c); err != nil {
				h.Bad = append(h.Bad, fmt.Sprintf("commit %s: %v", short, err))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return h, nil
}
