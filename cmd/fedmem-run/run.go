package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/profiles"
	"github.com/fedmem/fedmem/sandbox"
	"github.com/fedmem/fedmem/sandbox/launch"
)

const usage = `fedmem-run [flags] [--] CMD [ARGS…]

Runs CMD in a sandbox: the vault is read-only as a whole, the session's
inbox ($FEDMEM_INBOX = VAULT/90-inbox/<session>/) is the only writable vault
path, the workdir is writable (unless it lies inside the vault), home is
read-only with secrets masked, /tmp is private, the network goes out only
through fedmem-run's proxy (network: public by default: public addresses
only), and the agent holds no capability, runs with no_new_privs, a seccomp
filter and Landlock.

Exit status: the agent's; 124 limits.wall_time or --timeout hit; 125 fedmem
error (bad profile, missing vault, sandbox could not be built or verified);
126 CMD cannot be executed; 127 CMD not found; 128+n CMD killed by signal n.`

// run parses the command line into launch.Options and runs the session:
// everything else lives in sandbox/launch.
func run(args []string, stdin, stdout, stderr *os.File) int {
	// The standard library's flag package, not cobra: this binary starts
	// twice per launch, and flag stops at the first non-flag argument,
	// which is exactly "everything after CMD belongs to CMD".
	o := launch.Options{Stdin: stdin, Stdout: stdout, Stderr: stderr, HoldSignalsToExit: true}
	f := flag.NewFlagSet("fedmem-run", flag.ContinueOnError)
	f.SetOutput(stderr)
	f.Usage = func() {} // help goes to stdout, a usage error to stderr: see below
	f.StringVar(&o.Vault, "vault", os.Getenv("FEDMEM_VAULT"), "vault directory (default $FEDMEM_VAULT)")
	f.StringVar(&o.Profile, "profile", os.Getenv("FEDMEM_PROFILE"), "profile name or YAML file (default $FEDMEM_PROFILE, else the built-in named after CMD, else \"default\")")
	f.StringVar(&o.Workdir, "workdir", "", "working directory, writable unless inside the vault (default: current directory)")
	f.StringVar(&o.Report, "report", "", "write a JSON session report to FILE (opened before the agent starts; never through a link)")
	f.BoolVar(&o.Explain, "explain", false, "print the mount plan and layers, then exit")
	f.BoolVar(&o.ExplainJSON, "json", false, "with --explain: print the plan as JSON")
	f.StringVar(&o.Network, "network", "", "none, allowlist, public or host: may only tighten the profile's network")
	f.StringVar(&o.AgentUser, "agent-user", "", "root only: the host user the agent runs as when the profile names no run_as: NAME, UID, or either with :GROUP (a group name or gid); never 0. A user who is a member of the vault's agent group keeps that one group")
	f.StringVar(&o.Events, "events", "", "append the session's events (start, layers, network, limits hit, exit) to FILE as JSON lines")
	fsDenials := f.Bool("fs-denials", false, "report refused filesystem writes as \"denied\" events and in the report (each write call then makes a round trip to the sandbox's pid 1; refused system calls are always reported). Default: on with --events, else off; $FEDMEM_FS_DENIALS=0|1 overrides the default")
	f.DurationVar(&o.Timeout, "timeout", 0, "kill the whole sandbox after this long (exit 124); may only shorten the profile's limits.wall_time")
	var bk sandbox.BackendOptions
	backend := f.String("backend", "", "namespace (default), runc or containerd: what builds the sandbox (sandbox.NewBackend)")
	f.StringVar(&bk.ContainerdAddress, "containerd-address", "", "containerd socket (default $CONTAINERD_ADDRESS, else /run/containerd/containerd.sock)")
	f.StringVar(&bk.Image, "image", "", "with --backend containerd: run in this image of the local content store instead of the host's / read-only")
	showVersion := f.Bool("version", false, "print fedmem-run's version and exit")
	completion := f.String("completion", "", "print a shell completion script (bash, zsh or fish) and exit")
	if err := f.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stdout, "Usage: %s\n\nFlags (one or two dashes):\n", usage)
			f.SetOutput(stdout)
			f.PrintDefaults()
			return 0
		}
		// flag printed what was wrong. --report, when parsed before the
		// bad flag, still gets its report. Exit 125, fedmem-run's own
		// failure: 2 could be the agent's.
		if near := nearFlags(f, err); near != "" {
			fmt.Fprintf(stderr, "fedmem-run: did you mean %s?\n", near)
		}
		fmt.Fprintln(stderr, "usage: fedmem-run [flags] [--] CMD [ARGS…] (fedmem-run --help lists the flags)")
		earlyReport(&o, launch.StageFlags, err, stderr)
		return sandbox.ExitFedmemError
	}
	if *showVersion {
		fmt.Fprintf(stdout, "fedmem-run %s\n", buildVersion())
		return 0
	}
	if *completion != "" {
		return printCompletion(stdout, stderr, *completion)
	}
	o.Argv = f.Args()
	f.Visit(func(fl *flag.Flag) {
		if fl.Name == "fs-denials" {
			o.FSDenials = fsDenials
		}
	})
	if *backend != "" || bk.Image != "" {
		b, err := sandbox.NewBackend(*backend, bk)
		if err != nil {
			fmt.Fprintf(stderr, "fedmem-run: %v\n", err)
			earlyReport(&o, launch.StageBackend, err, stderr)
			return sandbox.ExitFedmemError
		}
		o.Backend = b
	}
	code, err := launch.Run(context.Background(), &o)
	if err != nil {
		fmt.Fprintf(stderr, "fedmem-run: %v\n", err)
	}
	return code
}

// earlyReport writes --report for a run refused before launch.Run
// (launch.WriteEarlyReport); exit code 125.
func earlyReport(o *launch.Options, stage mounts.Stage, cause error, stderr *os.File) {
	if err := launch.WriteEarlyReport(o, sandbox.ExitFedmemError, stage, cause); err != nil {
		fmt.Fprintf(stderr, "fedmem-run: report not written: %v\n", err)
	}
}

// nearFlags names the defined flags closest to the one err says is not
// defined ("--vaul": --vault), or "".
func nearFlags(f *flag.FlagSet, err error) string {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !ok {
		return ""
	}
	name = strings.TrimPrefix(name, "-")
	var near []string
	f.VisitAll(func(fl *flag.Flag) {
		if profiles.EditDistance(name, fl.Name) <= 2 || (len(name) > 2 && strings.HasPrefix(fl.Name, name)) {
			near = append(near, "--"+fl.Name)
		}
	})
	return strings.Join(near, " or ")
}
