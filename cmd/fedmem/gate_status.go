package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/fedmem/fedmem/gate"
)

func newGateStatusCmd() *cobra.Command {
	var o gateOptions
	cmd := &cobra.Command{
		Use:   "status --vault DIR",
		Short: "Show the gate's remote sync state (ahead, behind, last push, last error) and session pruning",
		Long: `status reads the sync state the gate keeps in its state directory and counts
ahead/behind from the vault's HEAD and the remote tip the gate last fetched. It
does not take the gate's lock, so it works while 'fedmem gate run' runs (as the
gate user: the state directory is private). See docs/multi-machine.md.

Exit codes: 0 in sync or no remote configured; 1 the last sync failed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.vault == "" {
				return usageErrorf("--vault DIR is required")
			}
			st, err := gate.ReadSyncStatus(o.vault, o.state)
			if err != nil {
				return err
			}
			pr, err := gate.ReadPruneStatus(o.vault, o.state)
			if err != nil {
				return err
			}
			printSyncStatus(cmd.OutOrStdout(), st, pr, o.json)
			if st.LastError != "" {
				return &exitError{Code: exitFailure, Silent: true}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&o.vault, "vault", "", "the vault directory (required)")
	cmd.Flags().StringVar(&o.state, "state", "", "the gate's state directory (default: .<vault-name>.fedmem-gate next to the vault)")
	cmd.Flags().BoolVar(&o.json, "json", false, "print the state as JSON")
	return cmd
}

// statusJSON is `gate status --json`: the sync state's fields as before,
// plus "sessions" (the last sweep's pruning of empty session folders).
type statusJSON struct {
	*gate.SyncStatus
	Sessions *gate.PruneStatus `json:"sessions,omitempty"`
}

func printSyncStatus(w io.Writer, st *gate.SyncStatus, pr *gate.PruneStatus, asJSON bool) {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(statusJSON{st, pr})
		return
	}
	defer func() {
		if pr == nil {
			fmt.Fprintln(w, "sessions:   no sweep has run yet (empty session folders are pruned by the sweep)")
			return
		}
		fmt.Fprintf(w, "sessions:   last sweep %s: %s; %d pruned in all\n", pr.At.UTC().Format(time.RFC3339), pruneLine(pr.AfterHours, pr.Pruned, pr.Waiting, pr.Kept), pr.PrunedTotal)
	}()
	if !st.Configured {
		fmt.Fprintln(w, "remote: none (the policy has no remote; this vault lives on one machine)")
		return
	}
	short := func(h string) string {
		if len(h) > 12 {
			return h[:12]
		}
		if h == "" {
			return "-"
		}
		return h
	}
	when := func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return t.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(w, "remote:     %s (branch %s)\n", st.Remote, st.Branch)
	fmt.Fprintf(w, "head:       %s on %s; remote at %s\n", short(st.Head), st.LocalBranch, short(st.RemoteHead))
	fmt.Fprintf(w, "ahead:      %d (local commits queued for the remote)\n", st.Ahead)
	fmt.Fprintf(w, "behind:     %d\n", st.Behind)
	fmt.Fprintf(w, "last fetch: %s\n", when(st.LastFetch))
	fmt.Fprintf(w, "last push:  %s (%d pushes, %d replayed, %d skipped as already on the remote, %d dropped)\n", when(st.LastPush), st.Pushes, st.Replayed, st.Skipped, st.Dropped)
	if st.LastError != "" {
		fmt.Fprintf(w, "last error: %s (at %s)\n", st.LastError, when(st.LastErrorAt))
	} else {
		fmt.Fprintln(w, "last error: none")
	}
	for _, f := range st.Flagged {
		fmt.Fprintf(w, "flagged:    held draft %s: after the remote moved (%s) its verdict is %s %v (was %v)\n", f.ID, short(f.Head), f.State, f.After, f.Before)
	}
}

// syncCheck is `fedmem doctor --vault`'s line on remote sync: none when the
// policy names no remote; ok with ahead/behind/last push; warn when the last
// sync failed or the state directory cannot be read (not the gate user).
func syncCheck(v string) []doctorCheck {
	st, err := gate.ReadSyncStatus(v, "")
	if err != nil {
		return []doctorCheck{{Name: "sync", Status: statusWarn, Detail: "sync state unreadable (run as the gate user): " + err.Error()}}
	}
	if !st.Configured {
		return nil
	}
	push := "never"
	if !st.LastPush.IsZero() {
		push = st.LastPush.UTC().Format(time.RFC3339)
	}
	detail := fmt.Sprintf("%s branch %s: ahead %d, behind %d, last push %s", st.Remote, st.Branch, st.Ahead, st.Behind, push)
	if st.LastError != "" {
		return []doctorCheck{{Name: "sync", Status: statusWarn, Detail: detail + "; last error: " + st.LastError,
			Fix: "promotions stay queued and every gate pass retries; see fedmem gate status --vault " + v}}
	}
	return []doctorCheck{{Name: "sync", Status: statusOK, Detail: detail}}
}

// short is an object id's first 12 characters, or "(none)".
func short(id string) string {
	if id == "" {
		return "(none)"
	}
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
