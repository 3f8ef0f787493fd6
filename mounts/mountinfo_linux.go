package mounts

import (
	"io"

	"github.com/moby/sys/mountinfo"
)

// parseMountinfo reads mountinfo text (moby/sys/mountinfo parses it on
// Linux only).
func parseMountinfo(r io.Reader) ([]*mountinfo.Info, error) {
	return mountinfo.GetMountsFromReader(r, nil)
}
