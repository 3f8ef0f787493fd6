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

func newPolicyCmd() *cobra.Command {
	var vaultDir string
	check := &cobra.Command{
		Use:   "check [FILE]",
		Short: "Validate a gate policy file",
		Long: `check parses a gate policy (default: the vault's 00-global/policy.yaml with
--vault) and prints every problem as FILE:LINE: message. See docs/policy.md.

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
			pol, err := policy.Parse(file, b)
			if err != nil {
				var joined interface{ Unwrap() []error }
				if errors.As(err, &joined) {
					for _, e := range joined.Unwrap() {
						fmt.Fprintln(cmd.OutOrStdout(), e)
					}
				} else {
					fmt.Fprintln(cmd.OutOrStdout(), err)
				}
				return &exitError{Code: exitFailure, Err: fmt.Errorf("%s: policy is invalid", file), Silent: true}
			}
			for _, w := range pol.Warnings(profiles.Builtins()) {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: warning: %s\n", file, w)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: ok\n", file)
			return nil
		},
	}
	check.Flags().StringVar(&vaultDir, "vault", "", "check the policy of this vault")
	cmd := &cobra.Command{Use: "policy", Short: "Work with the gate policy", Args: cobra.NoArgs}
	cmd.AddCommand(check, newPolicyReviewersCmd())
	return cmd
}
