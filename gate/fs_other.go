//go:build !linux

package gate

import (
	"context"

	"github.com/fedmem/fedmem/gate/intake"
	"github.com/fedmem/fedmem/gate/origin"
	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/vault"
	"github.com/fedmem/fedmem/vault/note"
)

// errUnsupported: claiming drafts safely needs openat2 (Linux 5.6+).
var errUnsupported = intake.ErrUnsupported

type inbox = intake.Inbox

// SessionRecord is what fedmem-run records about a session, in
// 90-inbox/.sessions/<session>.json, where the agent cannot reach it (one
// definition, in package vault, shared with the launcher).
type SessionRecord = vault.SessionRecord

func (g *Gate) openInbox() (*inbox, error)                             { return nil, errUnsupported }
func (g *Gate) claimSession(*inbox, string, int) ([]Claim, int, error) { return nil, 0, errUnsupported }
func (g *Gate) readClaim(string, int64) (readResult, error)            { return readResult{}, errUnsupported }
func (g *Gate) readClaimAt(string, int64, bool) (readResult, error) {
	return readResult{}, errUnsupported
}
func (g *Gate) sessionRecord(*inbox, string) *SessionRecord                 { return nil }
func (g *Gate) storeSessionReceipts(*inbox, *policy.Policy) (int, []string) { return 0, nil }
func (g *Gate) writeReceipt(*inbox, string, string, []byte) error           { return errUnsupported }
func (g *Gate) lockState() (func(), error)                                  { return nil, errUnsupported }

type readResult struct {
	Bytes  []byte
	Sum    string
	Reject *note.Finding
	Retry  bool
	Owner  *origin.DraftOwner
}

func (g *Gate) ServeReview(ctx context.Context, path string) error { return errUnsupported }

func (g *Gate) pruneHeldMarks(*inbox) int { return 0 }
