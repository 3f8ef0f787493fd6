// Command fedmem-containerd is the containerd backend's helper: fedmem-run
// execs it to run one OCI bundle on a containerd daemon through the
// containerd/v2 client (see sandbox/oci/ctrd). Also `gc` (remove what a
// killed session left) and `import ARCHIVE` (an OCI image archive into the
// fedmem namespace's content store).
package main

import (
	"os"

	"github.com/fedmem/fedmem/sandbox/oci/ctrd"
)

func main() { os.Exit(ctrd.Main(os.Args)) }
