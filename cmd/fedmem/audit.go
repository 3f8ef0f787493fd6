package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/fedmem/fedmem/gate"
	"github.com/fedmem/fedmem/gate/audit"
)

func init() {
	subcommands = append(subcommands, newAuditCmd)
}

func newAuditCmd() *cobra.Command {
	var vaultDir, state string
	var asJSON bool
	verify := &cobra.Command{
		Use:   "verify --vault DIR",
		Short: "Check the gate's hash-chained audit log",
		Long: `verify recomputes the hash chain of the gate's audit log and compares its
end with the head file. It reports every entry that was changed, removed,
inserted or reordered, and a log cut short.

Exit codes: 0 the log verifies; 1 it does not (or cannot be read); 2 bad usage.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir := state
			if dir == "" {
				if vaultDir == "" {
					return usageErrorf("give --vault DIR or --state DIR")
				}
				abs, err := filepath.Abs(vaultDir)
				if err != nil {
					return err
				}
				if real, err := filepath.EvalSymlinks(abs); err == nil {
					abs = real
				}
				dir = gate.DefaultStateDir(abs)
			}
			n, probs, err := audit.Verify(dir)
			if asJSON {
				_ = json.NewEncoder(cmd.OutOrStdout()).Encode(map[string]any{"entries": n, "problems": probs, "ok": err == nil})
			} else {
				for _, p := range probs {
					fmt.Fprintf(cmd.OutOrStdout(), "%s:%d: %s\n", filepath.Join(dir, audit.File), p.Line, p.Msg)
				}
				if err == nil {
					fmt.Fprintf(cmd.OutOrStdout(), "ok: %d entries, chain intact\n", n)
				}
			}
			return err
		},
	}
	verify.Flags().StringVar(&vaultDir, "vault", "", "the vault directory")
	verify.Flags().StringVar(&state, "state", "", "the gate's state directory, if not the default")
	verify.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	cmd := &cobra.Command{Use: "audit", Short: "Inspect the gate's audit log", Args: cobra.NoArgs}
	cmd.AddCommand(verify)
	return cmd
}
