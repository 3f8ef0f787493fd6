package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/fedmem/fedmem/gate/policy"
	"github.com/fedmem/fedmem/profiles"
	"github.com/fedmem/fedmem/vault"
)

func init() {
	subcommands = append(subcommands, newPolicyCmd)
}

// policyCheckResult is `fedmem policy check --json` (fields only ever
// added), shaped as `fedmem profile check --json`'s.
type policyCheckResult struct {
	File     string   `json:"file"`
	Valid    bool     `json:"valid"`
	Errors   []string `json:"errors"`
	Warnings []string `json:"warnings"`
}

func newPolicyCmd() *cobra.Command {
	var vaultDir string
	var asJSON bool
	check := &cobra.Command{
		Use:   "check [FILE]",
		Short: "Validate a gate policy file",
		Long: `check parses a gate policy (default: the vault's 00-global/policy.yaml with
--vault) and prints every problem as FILE:LINE: message (--json: one object
with file, valid, errors and warnings). See docs/policy.md.

Exit codes: 0 valid; 1 invalid or unreadable; 2 bad usage.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var file string
			switch {
			case len(args) == 1:
				file = args[0]
			case vaultDir != "":
				file = filepath.Join(vaultDir, filepath.FromSlash(vault.PolicyFile))
			default:
				return usageErrorf("give a policy FILE or --vault DIR")
			}
			b, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			res := policyCheckResult{File: file, Errors: []string{}, Warnings: []string{}}
			pol, err := policy.Parse(file, b)
			if err != nil {
				var joined interface{ Unwrap() []error }
				if errors.As(err, &joined) {
					for _, e := range joined.Unwrap() {
						res.Errors = append(res.Errors, e.Error())
					}
				} else {
					res.Errors = append(res.Errors, err.Error())
				}
			} else {
				res.Valid = true
				res.Warnings = append(res.Warnings, pol.Warnings(profiles.Builtins())...)
			}
			switch {
			case asJSON:
				if err := writeJSONOut(cmd.OutOrStdout(), res); err != nil {
					return err
				}
			case !res.Valid:
				for _, e := range res.Errors {
					fmt.Fprintln(cmd.OutOrStdout(), e)
				}
			default:
				for _, w := range res.Warnings {
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: warning: %s\n", file, w)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: ok\n", file)
			}
			if !res.Valid {
				return &exitError{Code: exitFailure, Err: fmt.Errorf("%s: policy is invalid", file), Silent: true}
			}
			return nil
		},
	}
	check.Flags().StringVar(&vaultDir, "vault", "", "check the policy of this vault")
	check.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON on stdout: file, valid, errors (FILE:LINE: message), warnings")
	cmd := &cobra.Command{Use: "policy", Short: "Work with the gate policy", Args: cobra.NoArgs}
	cmd.AddCommand(check, newPolicyReviewersCmd())
	return cmd
}
