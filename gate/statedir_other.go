//go:build !linux

package gate

import "errors"

// ErrUntrustedStateDir: see statedir_linux.go.
var ErrUntrustedStateDir = errors.New("untrusted gate state directory")

func prepareStateDir(string, int, []string) error { return errUnsupported }
