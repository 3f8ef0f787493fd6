package main

import (
	"encoding/json"
	"fmt"
	"os/user"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/fedmem/fedmem/vault"
)

func init() {
	subcommands = append(subcommands, newSessionsCmd)
}

// newSessionsCmd is `fedmem sessions`: the vault's sessions from the
// records fedmem-run wrote (as `docker ps` lists containers).
func newSessionsCmd() *cobra.Command {
	var vaultDir string
	var asJSON, open bool
	var last int
	cmd := &cobra.Command{
		Use:   "sessions --vault DIR [--open] [--last N] [--json]",
		Short: "List running and recent agent sessions of a vault",
		Long: `sessions lists the vault's sessions, newest first, from the records
fedmem-run writes in 90-inbox/.sessions/: the session id, whether it is open
(no end recorded: running, or its launcher was killed), when it started, the
profile, the agent's user (name and uid), the drafts now in its inbox folder
("-" where you cannot read it) and the workdir. A record that cannot be read
is listed with the reason.

Exit codes: 0 listed (also when there is none); 1 the records cannot be read;
2 bad usage.`,
		Example: `  fedmem sessions --vault ~/vault
  fedmem sessions --vault ~/vault --open --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if vaultDir == "" {
				return usageErrorf("give --vault DIR")
			}
			if last < 0 {
				return usageErrorf("--last must be 0 (all) or more")
			}
			all, err := vault.ListSessions(vaultDir)
			if err != nil {
				return err
			}
			var list []vault.SessionInfo
			for _, s := range all {
				if !open || s.Open {
					list = append(list, s)
				}
			}
			if last > 0 && len(list) > last {
				list = list[:last]
			}
			if asJSON {
				if list == nil {
					list = []vault.SessionInfo{}
				}
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(list)
			}
			if len(list) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no sessions")
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "SESSION\tSTATE\tSTARTED\tPROFILE\tAGENT\tDRAFTS\tWORKDIR")
			for _, s := range list {
				state := "ended"
				if s.Open {
					state = "open"
				}
				if s.Problem != "" {
					fmt.Fprintf(tw, "%s\tunreadable\t\t\t\t\t%s\n", oneLine(s.Session), oneLine(s.Problem))
					continue
				}
				drafts := "-"
				if s.Drafts >= 0 {
					drafts = strconv.Itoa(s.Drafts)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", oneLine(s.Session), state, s.Started, oneLine(s.Profile), agentName(s.UID), drafts, oneLine(s.Workdir))
			}
			return tw.Flush()
		},
	}
	f := cmd.Flags()
	f.StringVar(&vaultDir, "vault", "", "the vault directory")
	f.BoolVar(&open, "open", false, "only sessions with no end recorded")
	f.IntVar(&last, "last", 20, "at most this many, newest first (0: all)")
	f.BoolVar(&asJSON, "json", false, "print the sessions as JSON")
	return cmd
}

// agentName shows a uid with its user name when it has one.
func agentName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return fmt.Sprintf("%s (%d)", u.Username, uid)
	}
	return strconv.Itoa(uid)
}
