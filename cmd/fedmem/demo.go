package main

import (
	"context"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/fedmem/fedmem/cmd/fedmem/demo"
)

type demoOptions struct {
	dir     string        // parent of the demo's temporary directory
	keep    bool          // keep the demo directory afterwards
	runBin  string        // fedmem-run; default: next to this binary
	timeout time.Duration // for the agent run
	noGate  bool          // skip the gate
	// self is the fedmem binary the gate runs from as root; "" means this
	// executable (tests set it: their executable is the test binary).
	self string
}

func init() {
	subcommands = append(subcommands, newDemoCmd)
}

func newDemoCmd() *cobra.Command {
	var o demoOptions
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a hostile agent against a fresh demo vault and show what was blocked",
		Long: `demo creates a fresh vault, a workdir and a demo home (with a fake
~/.ssh key) in a temporary directory, then runs fedmem-run with a hostile
agent script that tries to write to the vault's notes, its contract, .git,
other sessions' inboxes, /etc, ~/.bashrc and ~/.ssh, and drops three drafts in
its inbox (a good note, one with a forged "status: approved", one with a
planted AWS key). It then checks from outside that the vault and the host are
unchanged, prints the session report, and runs one pass of the gate (what
"fedmem gate once" does) to show which drafts are promoted, held for review
or rejected, and why. Agent and gate run as the same user here, so the gate
runs in its same-user mode ("fedmem gate once --allow-same-user").

Exit status 0 means every attempt that must be blocked was blocked.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runDemo(cmd.Context(), o, !o.noGate, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&o.dir, "dir", "", "parent directory for the demo files (default /var/tmp, else $TMPDIR)")
	cmd.Flags().BoolVar(&o.keep, "keep", false, "keep the demo vault, workdir and report afterwards")
	cmd.Flags().StringVar(&o.runBin, "fedmem-run", "", "path of fedmem-run (default: next to this binary, else $PATH)")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 2*time.Minute, "time limit for the agent run")
	cmd.Flags().BoolVar(&o.noGate, "no-gate", false, "do not run the gate after the agent")
	return cmd
}

// runDemo runs the demo (package demo holds its steps); the demo policy
// names the reviewer `fedmem init` would.
func runDemo(ctx context.Context, o demoOptions, withGate bool, w io.Writer) error {
	return demo.Run(ctx, demo.Options{
		Dir:      o.dir,
		Keep:     o.keep,
		RunBin:   o.runBin,
		Timeout:  o.timeout,
		Gate:     withGate,
		Self:     o.self,
		Reviewer: defaultReviewers()[0],
	}, w)
}
