// Command fedmem-runc is the runc backend's helper: fedmem-run execs it to
// run one OCI bundle through runc's libcontainer (cgo; see sandbox/oci/runc).
package main

import (
	"os"

	"github.com/fedmem/fedmem/sandbox/oci/runc"
)

func main() { os.Exit(runc.Main(os.Args)) }
