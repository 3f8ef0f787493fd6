//go:build !linux

package repo

import (
	"errors"
	"os"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/fedmem/fedmem/vault"
)

var errUnsupported = errors.New("fedmem init is only supported on Linux")

type writer struct {
	root string
	gate vault.Owner
	res  *Result
}

func (w *writer) dir(string, os.FileMode, int, bool) error    { return errUnsupported }
func (w *writer) file(string, bool) (bool, error)             { return false, errUnsupported }
func (w *writer) create(string, []byte, string) error         { return errUnsupported }
func (w *writer) differs(string, plumbing.Hash) (bool, error) { return false, errUnsupported }
func (w *writer) gitDir() error                               { return errUnsupported }

func currentOwnership(string) (vault.Owner, *vault.Group, error) {
	return vault.Owner{}, nil, errUnsupported
}

func currentLauncherGroup(string) *vault.Group { return nil }
