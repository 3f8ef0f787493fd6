//go:build !unix

package profiles

import (
	"errors"
	"os"
)

var errNotDirectory = errors.New("not a directory")

func openNoFollow(p string) (*os.File, error) { return os.Open(p) }

// trustedProfileFile: only Unix file modes are checked.
func trustedProfileFile(SearchDir, string, *os.File) error { return nil }

// trustedStoreFile: only Unix file modes are checked.
func trustedStoreFile(string, *os.File) error { return nil }
