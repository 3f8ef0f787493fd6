// Command fedmem-run runs an untrusted agent in a sandbox where the memory
// vault is read-only and the agent's only writable vault path is its own
// session inbox.
//
//	fedmem-run [--vault DIR] [--profile NAME|FILE] [--workdir DIR] [--report FILE] [--explain] [--] CMD [ARGS…]
//
// This is the untrusted side's launcher. It must not link the gate, go-git,
// gitleaks or containerd (test/boundary enforces it): every package it links
// is paid for at each launch, twice (the launcher and the sandbox's pid 1
// are the same binary).
package main

import (
	"os"

	"github.com/fedmem/fedmem/sandbox"
	"github.com/fedmem/fedmem/sandbox/pid1"
)

func main() {
	// The sandbox's pid 1 is this binary re-executed with a hidden argv[0]:
	// dispatch before any flag parsing, so nothing the agent controls is
	// parsed by it.
	if len(os.Args) > 0 && os.Args[0] == sandbox.InitArg0 {
		pid1.InitMain()
		return
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
