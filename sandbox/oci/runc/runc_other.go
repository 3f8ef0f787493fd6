//go:build !linux

package runc

import (
	"fmt"
	"os"
)

// Main reports that the runc backend needs Linux.
func Main(args []string) int {
	fmt.Fprintln(os.Stderr, "fedmem-runc: the runc backend needs Linux")
	return 125
}
