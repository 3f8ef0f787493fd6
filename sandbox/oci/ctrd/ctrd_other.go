//go:build !linux

package ctrd

import (
	"fmt"
	"os"
)

// Main reports that the containerd backend needs Linux.
func Main(args []string) int {
	fmt.Fprintln(os.Stderr, "fedmem-containerd: the containerd backend needs Linux")
	return 125
}
