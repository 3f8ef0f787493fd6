// Command fedmem-cred is fedmem-run's credential helper (guarantee 8): it
// terminates TLS for the hosts a profile's credentials name, with a
// per-session CA, and puts the real values on the wire (package
// sandbox/netproxy/intercept). It is a separate binary so that fedmem-run
// itself links no net/http or crypto/tls: every session that uses no
// credential starts without them. fedmem-run starts it; it is not a
// command for people.
package main

import (
	"fmt"
	"os"

	"github.com/fedmem/fedmem/sandbox/netproxy/intercept"
)

var version = "dev"

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--version" {
		fmt.Println("fedmem-cred", version)
		return
	}
	if len(os.Args) != 2 || os.Args[1] != "serve" {
		fmt.Fprintln(os.Stderr, "usage: fedmem-cred serve (started by fedmem-run, config on stdin, connections on fd 3)")
		os.Exit(2)
	}
	os.Exit(intercept.Main())
}
