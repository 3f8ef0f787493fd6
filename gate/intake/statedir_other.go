//go:build !linux

package intake

import "errors"

// ErrUntrustedStateDir: see statedir_linux.go.
var ErrUntrustedStateDir = errors.New("untrusted gate state directory")

func PrepareStateDir(string, int, []string) error { return ErrUnsupported }
