package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/fedmem/fedmem/gate"
	"github.com/fedmem/fedmem/gate/audit"
	"github.com/fedmem/fedmem/gate/review"
	"github.com/fedmem/fedmem/gate/sign"
)

func init() {
	subcommands = append(subcommands, newAuditCmd)
}

func newAuditCmd() *cobra.Command {
	var vaultDir, state, pubKey string
	var asJSON bool
	verify := &cobra.Command{
		Use:   "verify --vault DIR",
		Short: "Check the gate's hash-chained audit log and its anchors in Git",
		Long: `verify recomputes the hash chain of the gate's audit log and compares its
end with the head file. It reports every entry that was changed, removed,
inserted or reordered, and a log cut short.

With --vault it also reads the vault's history: every gate commit records the
audit head at commit time (trailer Fedmem-Audit-Head), and each must be in the
chain — so a log cut short and its head file rewritten to match is still
reported. With --pubkey (an OpenSSH public key or an armored OpenPGP public
key) every gate commit's signature must verify; without it, unsigned gate
commits are reported as a warning.

Exit codes: 0 the log verifies; 1 it does not (or cannot be read); 2 bad usage.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir := state
			var abs string
			if vaultDir != "" {
				var err error
				if abs, err = filepath.Abs(vaultDir); err != nil {
					return err
				}
				if real, err := filepath.EvalSymlinks(abs); err == nil {
					abs = real
				}
			}
			if dir == "" {
				if abs == "" {
					return usageErrorf("give --vault DIR or --state DIR")
				}
				dir = gate.DefaultStateDir(abs)
			}
			if pubKey != "" && abs == "" {
				return usageErrorf("--pubkey needs --vault DIR (signatures are on the vault's commits)")
			}
			var hist *sign.History
			if abs != "" {
				var ver *sign.Verifier
				if pubKey != "" {
					var err error
					if ver, err = sign.LoadVerifier(pubKey); err != nil {
						return err
					}
				}
				var err error
				if hist, err = sign.ReadHistory(abs, ver); err != nil {
					return err
				}
			}
			var anchors []audit.Anchor
			if hist != nil {
				anchors = hist.Anchors
			}
			n, probs, err := audit.VerifyAnchored(dir, anchors)
			viaGate := false
			if errors.Is(err, fs.ErrPermission) && abs != "" && pubKey == "" {
				// A reviewer who is not the gate user cannot read its
				// state directory: the running gate verifies its own log
				// against the vault's history for any reviewer.
				if r, aerr := askAuditVerify(abs, state); aerr == nil {
					viaGate = true
					n, probs, err = r.Entries, r.Problems, nil
					if r.Error != "" {
						err = errors.New(r.Error)
					}
					if r.History != nil {
						hist = r.History
						hist.Anchors = make([]audit.Anchor, r.Anchors)
					}
				} else {
					err = fmt.Errorf("%w\n(the gate's state directory is not yours to read; asking the running gate failed too: %v)", err, aerr)
				}
			}
			if viaGate {
				fmt.Fprintln(cmd.ErrOrStderr(), "verified by the running gate over its review socket (you cannot read its state directory)")
			}
			var warnings []string
			if hist != nil && hist.GateCommits > 0 {
				switch {
				case hist.Checked && len(hist.Bad) > 0 && err == nil:
					err = fmt.Errorf("%d gate commit(s) without a valid signature: %w", len(hist.Bad), sign.ErrSignature)
				case !hist.Checked && hist.Unsigned > 0:
					warnings = append(warnings, fmt.Sprintf("warning: %d of %d gate commits are unsigned (start the gate with --sign-key to sign them)", hist.Unsigned, hist.GateCommits))
				case !hist.Checked:
					warnings = append(warnings, "warning: gate commits are signed but no --pubkey was given: signatures not checked")
				}
			}
			if asJSON {
				out := map[string]any{"entries": n, "problems": probs, "ok": err == nil, "warnings": warnings}
				if hist != nil {
					out["history"] = hist
					out["anchors"] = len(hist.Anchors)
					out["unsigned"] = hist.Unsigned > 0
				}
				_ = json.NewEncoder(cmd.OutOrStdout()).Encode(out)
			} else {
				for _, p := range probs {
					fmt.Fprintf(cmd.OutOrStdout(), "%s:%d: %s\n", filepath.Join(dir, audit.File), p.Line, p.Msg)
				}
				if hist != nil {
					for _, b := range hist.Bad {
						fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", abs, b)
					}
				}
				for _, w := range warnings {
					fmt.Fprintln(cmd.ErrOrStderr(), w)
				}
				if err == nil {
					msg := fmt.Sprintf("ok: %d entries, chain intact", n)
					if hist != nil {
						msg += fmt.Sprintf(", %d anchors in %d gate commits", len(hist.Anchors), hist.GateCommits)
						if hist.Checked {
							msg += ", signatures verified"
						}
					}
					fmt.Fprintln(cmd.OutOrStdout(), msg)
				}
			}
			return err
		},
	}
	verify.Flags().StringVar(&vaultDir, "vault", "", "the vault directory")
	verify.Flags().StringVar(&state, "state", "", "the gate's state directory, if not the default")
	verify.Flags().StringVar(&pubKey, "pubkey", "", "public key the gate's commits must be signed with (OpenSSH or armored OpenPGP)")
	verify.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	cmd := &cobra.Command{Use: "audit", Short: "Inspect the gate's audit log and the sessions' read receipts", Args: cobra.NoArgs}
	cmd.AddCommand(verify, newAuditReadersCmd(), newAuditSessionCmd())
	return cmd
}

// askAuditVerify has the running gate verify its audit log (op
// audit-verify on the review socket).
func askAuditVerify(vaultDir, state string) (*review.AuditResult, error) {
	sock, err := defaultSocket(vaultDir, state)
	if err != nil {
		return nil, err
	}
	resp, err := review.Ask(sock, review.Request{Op: "audit-verify"})
	if err != nil {
		return nil, err
	}
	if resp.Audit == nil {
		return nil, errors.New("the gate did not answer audit-verify (is it older than this fedmem?)")
	}
	return resp.Audit, nil
}
