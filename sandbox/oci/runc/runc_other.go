//go:build !linux || !cgo

package runc

import (
	"fmt"
	"os"
)

// Main reports that the runc backend needs Linux and cgo.
func Main(args []string) int {
	fmt.Fprintln(os.Stderr, "fedmem-runc: the runc backend needs Linux and cgo (libcontainer's nsexec): build with CGO_ENABLED=1")
	return 125
}
