package main

// fedmem-run --probe [--json] reports what this kernel offers the sandbox.
// `fedmem doctor` runs it: the admin tool must not link the sandbox
// packages, the launcher has them anyway. The probe changes nothing on the
// host: it starts two short-lived children to try a user namespace, and
// reads /proc and /sys.

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/fedmem/fedmem/sandbox"
	"github.com/fedmem/fedmem/sandbox/probe"
)

// probeArg asks fedmem-run for the probe; it is dispatched before any flag
// parsing (like the sandbox's init), from this file's init().
const (
	probeArg       = "--probe"
	probeNoopArg   = "--probe-noop"   // a child that only exits 0 (inside a new user namespace)
	probeAsUserArg = "--probe-userns" // a child, as an unprivileged uid, that tries a user namespace
)

func init() {
	if len(os.Args) < 2 || os.Args[0] == sandbox.InitArg0 {
		return
	}
	switch os.Args[1] {
	case probeNoopArg:
		os.Exit(0)
	case probeAsUserArg:
		if err := tryUserns(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case probeArg:
		os.Exit(probeMain(os.Args[2:], os.Stdout, os.Stderr))
	}
}

// The probe's report is the wire type of package probe, which `fedmem
// doctor` decodes too.
type (
	Probe       = probe.Probe
	AgentFacts  = probe.AgentFacts
	Cgroup      = probe.Cgroup
	CgroupLimit = probe.CgroupLimit
)

func probeMain(args []string, stdout, stderr io.Writer) int {
	asJSON := false
	for _, a := range args {
		switch a {
		case "--json":
			asJSON = true
		default:
			fmt.Fprintf(stderr, "fedmem-run: --probe: unknown argument %q (usage: fedmem-run --probe [--json])\n", a)
			return 2
		}
	}
	p := runProbe()
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(p); err != nil {
			fmt.Fprintf(stderr, "fedmem-run: %v\n", err)
			return 125
		}
		return 0
	}
	fmt.Fprintf(stdout, "kernel               %s (%s)\n", p.Kernel, p.Arch)
	fmt.Fprintf(stdout, "userns               %v %s\n", p.Userns, p.UsernsError)
	if p.UsernsUnprivileged != nil {
		fmt.Fprintf(stdout, "userns unprivileged  %v %s\n", *p.UsernsUnprivileged, p.UsernsUnprivilegedError)
	}
	for k, v := range p.Sysctls {
		fmt.Fprintf(stdout, "sysctl               %s = %s\n", k, v)
	}
	fmt.Fprintf(stdout, "landlock ABI         %d\n", p.LandlockABI)
	fmt.Fprintf(stdout, "seccomp              %v (mode %d) %s\n", p.Seccomp, p.SeccompMode, p.SeccompError)
	fmt.Fprintf(stdout, "cgroup               %s %s controllers=%v writable=%v %s\n", p.Cgroup.Version, p.Cgroup.Path, p.Cgroup.Controllers, p.Cgroup.Writable, p.Cgroup.Detail)
	for _, l := range p.Cgroup.Limits {
		fmt.Fprintf(stdout, "cgroup %-13s %s enforce=%v %s%s\n", l.Controller, l.Hierarchy, l.Enforce, l.Via, l.Why)
	}
	fmt.Fprintf(stdout, "container            %q %v\n", p.Container, p.ContainerHints)
	fmt.Fprintf(stdout, "agent                uid %d gid %d (%s) %s extra_groups=%v newgidmap=%q\n", p.Agent.UID, p.Agent.GID, p.Agent.Source, p.Agent.Error, p.Agent.ExtraGroups, p.Agent.Newgidmap)
	fmt.Fprintf(stdout, "idmap                %v %s %s\n", p.Agent.Idmap, p.Agent.IdmapDir, p.Agent.IdmapError)
	return 0
}
