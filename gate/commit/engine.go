package commit

import (
	"log/slog"
	"path/filepath"
	"time"

	"github.com/fedmem/fedmem/gate/audit"
	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/vault/repo"
)

// Host is what the engine asks of the gate.
type Host interface {
	// Signature is the gate's commit identity under pol.
	Signature(pol *policy.Policy) repo.Signature
	// NewID names a group marker (the gate's claim ids: time and random).
	NewID() string
	// Fault is the crash tests' hook at a named point of a flush (a
	// test's helper process kills itself there); nothing in the binary.
	Fault(point string)
}

// Config is what an Engine works on.
type Config struct {
	Repo  *repo.Repo
	Audit *audit.Log
	Vault string // the vault's work tree
	State string // the gate's state directory (committing/, checkout.json)
	Log   *slog.Logger
	Now   func() time.Time
	Host  Host
}

// Engine is the gate's committer. Its methods are called with the gate's
// lock held (one writer of state and refs).
type Engine struct {
	repo  *repo.Repo
	audit *audit.Log
	vault string
	state string
	log   *slog.Logger
	now   func() time.Time
	host  Host
	// pass is the open group of a pass (groupcommit.go); nil outside one.
	pass *pass
	// groups maps a draft id to the base its group marker records
	// (groupcommit.go); nil until read.
	groups map[string]repo.Hash
	// rec records a pass's decisions off its goroutine (asyncrecord.go).
	rec *recorder
	// journaled: the checkout journal lists files not yet checked out;
	// journalExtra: some of them an earlier, failed checkout's
	// (checkoutjournal.go).
	journaled, journalExtra bool
}

// New returns an engine over c.
func New(c Config) *Engine {
	return &Engine{repo: c.Repo, audit: c.Audit, vault: c.Vault, state: c.State, log: c.Log, now: c.Now, host: c.Host}
}

func (e *Engine) statePath(parts ...string) string {
	return filepath.Join(append([]string{e.state}, parts...)...)
}

func (e *Engine) fault(point string) { e.host.Fault(point) }

// InPass reports whether a group is open.
func (e *Engine) InPass() bool { return e.pass != nil }

// JournalLeft marks the checkout journal as holding files of an earlier
// checkout of this engine that did not finish, as a failed checkout
// leaves it (the next flush redoes them at HEAD).
func (e *Engine) JournalLeft() { e.journaled = true }
