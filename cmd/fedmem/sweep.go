package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/fedmem/fedmem/gate/review"
	"github.com/fedmem/fedmem/gate/sweep"
)

// newGateSweepCmd is `fedmem gate sweep` (registered in gate.go).
func newGateSweepCmd() *cobra.Command {
	var o gateOptions
	cmd := &cobra.Command{
		Use:   "sweep --vault DIR",
		Short: "Withhold active notes past stale_after or whose sources changed",
		Long: `sweep looks at every note in force (status absent or stable) outside
00-global/, 90-inbox/ and 99-archive/, and withholds — one gate commit each,
with an audit entry — a note whose stale_after has passed or whose
fingerprinted sources no longer have their recorded blob id at HEAD. A
withheld note gets status: draft and a withheld: {at, reason, detail} key
(docs/vault.md). It also removes empty session folders 90-inbox/<session>/
once the policy's grace period (inbox.prune_empty_sessions_after_hours,
default 24) has passed since the session ended (or since the folder last
changed, without a session record); never a live session's folder, never
one holding anything (docs/gate.md, "Pruning empty sessions").
gate run sweeps on its own every minute at most.

Exit codes: 0 done; 1 a note could not be withheld or the gate failed; 2 usage.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			g, err := o.open(cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer g.Close()
			s, err := g.Sweep()
			if err != nil {
				return err
			}
			printSweep(cmd.OutOrStdout(), s, o.json)
			if len(s.Errors) > 0 {
				return &exitError{Code: exitFailure, Err: fmt.Errorf("%d note(s) could not be withheld", len(s.Errors))}
			}
			return nil
		},
	}
	o.flags(cmd)
	cmd.Flags().BoolVar(&o.json, "json", false, "print the summary as JSON")
	return cmd
}

func printSweep(w io.Writer, s *sweep.Summary, asJSON bool) {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(s)
		return
	}
	for _, x := range s.Withheld {
		fmt.Fprintf(w, "withheld %s @ %.12s: %s: %s\n", quoteName(x.Path), x.Commit, x.Reason, x.Detail)
	}
	for _, e := range s.Errors {
		fmt.Fprintf(w, "error    %s\n", e)
	}
	fmt.Fprintf(w, "%d notes in force checked, %d withheld\n", s.Checked, len(s.Withheld))
	if p := s.Sessions; p != nil {
		for _, sess := range p.Pruned {
			fmt.Fprintf(w, "pruned   empty session folder 90-inbox/%s\n", sess)
		}
		for _, e := range p.Errors {
			fmt.Fprintf(w, "error    sessions: %s\n", e)
		}
		fmt.Fprintln(w, pruneLine(p.AfterHours, len(p.Pruned), p.Waiting, p.Kept))
	}
}

// pruneLine is the one-line account of empty-session pruning (sweep, status).
func pruneLine(hours, pruned, waiting, kept int) string {
	if hours <= 0 {
		return "session folders: pruning off (policy inbox.prune_empty_sessions_after_hours: 0)"
	}
	return fmt.Sprintf("session folders: %d empty pruned, %d empty waiting (live, or idle < %d h), %d holding files", pruned, waiting, hours, kept)
}

// newReviewReverifyCmd is `fedmem review reverify PATH|ID` (registered in
// review.go): the running gate re-checks a withheld note for the reviewer.
func newReviewReverifyCmd(o *reviewOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "reverify PATH|ID",
		Short: "Re-check a withheld note's sources and verifiers; restore it if they hold",
		Long: `reverify names a withheld note by its vault path or by the id of the
decision that promoted it. The gate checks that every fingerprinted source
has its recorded blob id at HEAD and that the policy's verifiers for its type
pass; then it restores the note by a gate commit (status stable, a fresh
stale_after if the old one passed, verified: human:<you>). Otherwise it prints
what fails and exits 1.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, a []string) error {
			p, err := o.socketPath()
			if err != nil {
				return err
			}
			resp, err := review.Ask(p, review.Request{Op: "reverify", ID: a[0]})
			if err != nil {
				return err
			}
			r := resp.Reverify
			if r == nil {
				return fmt.Errorf("the gate did not answer the reverify request (is it older than this fedmem?)")
			}
			if o.json {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				_ = enc.Encode(r)
			} else if r.Restored {
				fmt.Fprintf(cmd.OutOrStdout(), "restored %s @ %s (reverified by %s)\n", quoteName(r.Path), r.Commit, resp.Reviewer)
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "still withheld %s:\n", quoteName(r.Path))
				for _, f := range r.Failures {
					fmt.Fprintf(cmd.OutOrStdout(), "  %s\n", visible(f))
				}
			}
			if !r.Restored {
				return &exitError{Code: exitFailure, Silent: true}
			}
			return nil
		},
	}
}
