package gate

// The gate's side of gate/commit: the engine over the gate's repository,
// audit log and state directory, and the host it asks for the commit
// identity, the group markers' ids and the crash tests' hook.

import (
	"time"

	"github.com/fedmem/fedmem/gate/commit"
	"github.com/fedmem/fedmem/gate/ledger"
	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/vault/repo"
)

// groupFault is a test hook called at named points of a claim, a
// decision's record and a group's flush (a test's helper process kills
// itself there); it does nothing in the binary.
var groupFault = func(point string) {}

// Flush a group after this many drafts, or when its oldest undecided draft
// has waited this long, whichever comes first (latency under a burst; see
// groupDue). Variables so that a crash test can make small groups.
var (
	groupMaxDrafts = 128
	groupMaxWait   = 250 * time.Millisecond
)

// committingDir holds the promotion markers (commit.Dir).
const committingDir = commit.Dir

// committer is the gate's commit engine (made by Open).
func (g *Gate) committer() *commit.Engine {
	return commit.New(commit.Config{Repo: g.repo, Audit: g.audit, Vault: g.vaultDir, State: g.state,
		Log: g.log, Now: g.now, Host: commitHost{g}})
}

type commitHost struct{ g *Gate }

func (h commitHost) Signature(pol *policy.Policy) repo.Signature { return h.g.signature(pol) }

func (h commitHost) NewID() string { return ledger.NewID(h.g.now()) }

func (h commitHost) Fault(point string) { groupFault(point) }
