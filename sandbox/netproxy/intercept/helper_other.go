//go:build !linux

package intercept

import (
	"fmt"
	"os"
)

// Main is fedmem-cred; the credential proxy runs on Linux only.
func Main() int {
	fmt.Fprintln(os.Stderr, "fedmem-cred: Linux only")
	return 125
}
