package main

import (
	"encoding/json"
	"fmt"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/gate/review"
	"github.com/fedmem/fedmem/vault"
)

// reviewerLine shows a reviewer entry with the user it names: a uid with
// its user name, a name with its uid.
func reviewerLine(r string) string {
	if n, err := strconv.Atoi(r); err == nil {
		if u, err := user.LookupId(strconv.Itoa(n)); err == nil {
			return fmt.Sprintf("%s (%s)", r, u.Username)
		}
		return r + " (no such user)"
	}
	if u, err := user.Lookup(r); err == nil {
		return fmt.Sprintf("%s (uid %s)", r, u.Uid)
	}
	return r + " (no such user)"
}

// newPolicyReviewersCmd is `fedmem policy reviewers list|add|remove`: the
// running gate changes the policy's reviewers by a gate commit, asked by a
// current reviewer over the review socket (gate/policyedit.go).
func newPolicyReviewersCmd() *cobra.Command {
	o := &reviewOptions{}
	cmd := &cobra.Command{
		Use:   "reviewers",
		Short: "List, add or remove the policy's reviewers (a gate commit)",
		Long: `reviewers changes who may review held drafts. The vault's policy is the
gate's to commit: add and remove ask the running gate (fedmem gate run) over
its review socket, which checks that you are a reviewer now (SO_PEERCRED),
edits reviewers in 00-global/policy.yaml (keeping the rest of the file), and
commits it with trailers naming the change and you (Fedmem-Policy,
Fedmem-Reviewer) and an audit entry. The last reviewer cannot be removed.
NAME is a user name or a numeric uid.

Exit codes: 0 done; 1 refused or failed (the message says why); 2 bad usage.`,
		Example: `  fedmem policy reviewers --vault /srv/vault add alice
  fedmem policy reviewers --vault /srv/vault remove root`,
		Args: cobra.NoArgs,
	}
	pf := cmd.PersistentFlags()
	pf.StringVar(&o.vault, "vault", "", "the vault directory (finds the socket next to it)")
	pf.StringVar(&o.state, "state", "", "the gate's state directory, if not the default")
	pf.StringVar(&o.socket, "socket", "", "the review socket path")
	pf.BoolVar(&o.json, "json", false, "print the response as JSON")
	cmd.AddCommand(&cobra.Command{
		Use: "list", Short: "List the reviewers of the vault's policy", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.vault == "" {
				return usageErrorf("give --vault DIR")
			}
			pol, err := policy.Load(filepath.Join(o.vault, filepath.FromSlash(vault.PolicyFile)))
			if err != nil {
				return err
			}
			if o.json {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(map[string]any{"reviewers": pol.Reviewers})
			}
			for _, r := range pol.Reviewers {
				fmt.Fprintln(cmd.OutOrStdout(), reviewerLine(r))
			}
			return nil
		},
	})
	for _, op := range []string{"add", "remove"} {
		cmd.AddCommand(&cobra.Command{
			Use:   op + " NAME",
			Short: map[string]string{"add": "Make NAME a reviewer", "remove": "Stop NAME being a reviewer"}[op],
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, a []string) error {
				resp, err := o.ask(review.Request{Op: "reviewers", Change: op, Reviewer: a[0]})
				if err != nil {
					return err
				}
				if o.json {
					return json.NewEncoder(cmd.OutOrStdout()).Encode(map[string]any{"commit": resp.Commit, "reviewers": resp.Reviewers, "by": resp.Reviewer})
				}
				fmt.Fprintf(cmd.OutOrStdout(), "reviewers: %s (%s %s by %s @ %s)\n", strings.Join(resp.Reviewers, ", "), op, a[0], resp.Reviewer, resp.Commit)
				return nil
			},
		})
	}
	return cmd
}
