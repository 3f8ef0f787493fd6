package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/fedmem/fedmem/profiles"
)

func newProfileAllowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "allow FILE",
		Short: "Allow this content of a profile file an agent could have written",
		Long: `allow records the sha256 of FILE in ~/.config/fedmem/allowed-profiles.
fedmem-run uses a profile file in a project's .fedmem/profiles, or one inside
a path the session may write (workdir, writable:, state), only when its
content has been allowed: read the file first. A changed file must be allowed
again (docs/profiles.md, "Allowing project profiles").`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			abs, hash, err := profiles.HashFile(args[0])
			if err != nil {
				return err
			}
			home, err := os.UserHomeDir()
			if err != nil {
				return err
			}
			store := profiles.AllowStore(home)
			if err := profiles.Allow(store, abs, hash); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "allowed %s\n  sha256 %s\n  store  %s\n", abs, hash, store)
			return nil
		},
	}
}
