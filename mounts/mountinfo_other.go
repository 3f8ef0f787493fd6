//go:build !linux

package mounts

import (
	"errors"
	"io"

	"github.com/moby/sys/mountinfo"
)

// parseMountinfo: there is no mountinfo to verify outside Linux; the admin
// CLI (which builds on darwin for review) plans, it never runs a sandbox.
func parseMountinfo(io.Reader) ([]*mountinfo.Info, error) {
	return nil, errors.New("mount verification needs Linux (/proc/self/mountinfo)")
}
