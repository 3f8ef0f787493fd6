package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/fedmem/fedmem/sandbox/netctl"
)

func init() {
	subcommands = append(subcommands, newNetCmd)
}

// newNetCmd is `fedmem net`: a running session's network, from outside.
// Only a protocol client (netctl): fedmem links no sandbox code.
func newNetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "net",
		Short: "Change a running session's network from another terminal",
	}
	uid := os.Getuid()
	allow := &cobra.Command{
		Use:   "allow SESSION HOST",
		Short: "Let a running session reach one more host",
		Long: `net allow lets the running session SESSION (fedmem sessions --open lists
them) reach HOST from now on, until the session ends: an allow-list entry
(host, host:port, *.domain[:port], an IP literal, as in a profile's allow:).
Under network: public it also reaches an address public refuses (a loopback
or private literal) when HOST names it.

It asks the session's fedmem-run over its control socket
($XDG_RUNTIME_DIR/fedmem/sessions/SESSION/control.sock; /run/fedmem/sessions
for root; $TMPDIR/fedmem-UID/sessions without XDG_RUNTIME_DIR). Only the uid
that started the session may ask, from outside any sandbox: fedmem-run
checks the caller with SO_PEERCRED. The socket does not exist inside the
sandbox. Each request, granted or refused, is a net-allow event of the
session, and the hosts added are named after the agent exits and in the
report (net_allowed).

--uid names another uid's session folder (for root's): its fedmem-run still
answers only its own launching uid.

Exit codes: 0 allowed; 1 refused, or no such running session; 2 bad usage.`,
		Example: `  fedmem net allow 20261202-0120-ab12 registry.example.com:443`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			what, err := netctl.Allow(ctx, uid, args[0], args[1])
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), what)
			return nil
		},
	}
	allow.Flags().IntVar(&uid, "uid", uid, "the uid that started the session (where its control socket is; default yours)")
	cmd.AddCommand(allow)
	return cmd
}
