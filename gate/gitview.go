package gate

import (
	"github.com/fedmem/fedmem/gate/durable"
	"github.com/fedmem/fedmem/vault/repo"
)

// The gate reaches Git only through vault/repo (the one package that
// imports go-git, test/boundary checks it). This file is where it opens
// the repository with what the gate lends it.

// ErrConcurrentUpdate is returned when the branch moved between reading HEAD
// and publishing a commit (the compare-and-swap failed).
var ErrConcurrentUpdate = repo.ErrConcurrentUpdate

// change is one file a commit writes.
type change = repo.Change

// openRepo opens the vault repository for the gate: the lock intent in the
// gate's state dir, work-tree writes that a pass's group leaves to its
// barrier (durable.WriteAtomicVia), and the group commit's fault points.
func openRepo(dir, intent string) (*repo.Repo, error) {
	return repo.Open(dir, repo.Options{
		Intent:    intent,
		WriteFile: durable.WriteAtomicVia,
		Fault:     func(point string) { groupFault(point) },
	})
}
