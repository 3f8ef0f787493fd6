package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/fedmem/fedmem/profiles"
	"github.com/fedmem/fedmem/profiles/resolve"
)

func init() {
	subcommands = append(subcommands, newProfileCmd)
}

// placeholderVault stands for the vault in `profile explain` without --vault.
const placeholderVault = "/path/to/vault"

// explainSession is the session id shown by `profile explain`: fedmem-run
// picks a fresh one per run.
const explainSession = "SESSION"

func newProfileCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "profile",
		Short: "List, show, check and explain agent profiles",
		Long: `profile works with the profiles fedmem-run applies to agents (see
docs/profiles.md): the built-ins and YAML files.

Exit codes: 0 ok (check: warnings go to stderr); 1 the profile is invalid or
breaks a rule; 2 bad usage.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(cmd.ErrOrStderr())
			_ = cmd.Help()
			return usageErrorf("a profile command is required")
		},
	}
	cmd.AddCommand(newProfileListCmd(), newProfileShowCmd(), newProfileCheckCmd(), newProfileExplainCmd(), newProfileAllowCmd())
	return cmd
}

type profileListEntry struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Extends     string `json:"extends,omitempty"`
}

func newProfileListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the built-in profiles",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var list []profileListEntry
			for _, n := range profiles.Builtins() {
				p, _, err := profiles.Load(n)
				if err != nil {
					return internalErrorf("built-in profile %s: %v", n, err)
				}
				list = append(list, profileListEntry{Name: n, Description: strings.TrimSpace(p.Description), Extends: p.Extends})
			}
			if asJSON {
				return writeJSONOut(cmd.OutOrStdout(), list)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tDESCRIPTION")
			for _, e := range list {
				fmt.Fprintf(tw, "%s\t%s\n", e.Name, strings.Join(strings.Fields(e.Description), " "))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array")
	return cmd
}

func newProfileShowCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use: "show NAME|FILE",
		Long: `show prints a profile as fedmem-run applies it. A NAME is looked up as
fedmem-run does: ./.fedmem/profiles/NAME.yaml, ~/.config/fedmem/profiles,
/etc/fedmem/profiles, then the built-ins (docs/profiles.md, "Search path").`,
		Short: "Print a profile as fedmem-run applies it (extends resolved, defaults filled in)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			search := resolve.ProfileSearch("")
			p, hash, err := profiles.LoadFrom(args[0], search)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSONOut(cmd.OutOrStdout(), map[string]any{"profile": p, "profile_hash": hash, "profile_source": p.Source})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "# profile %s, resolved (sha256 %s) from %s (%s)\n", args[0], hash, p.Source, profiles.SourceKind(p.Source, search))
			enc := yaml.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent(2)
			if err := enc.Encode(p); err != nil {
				return err
			}
			return enc.Close()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// checkResult is the JSON of `profile check` (fields are only ever added).
type checkResult struct {
	Profile  string   `json:"profile"`
	Valid    bool     `json:"valid"`
	Errors   []string `json:"errors"`
	Warnings []string `json:"warnings"`
}

func newProfileCheckCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "check NAME|FILE",
		Short: "Validate a profile and enforce fedmem's rules on it",
		Long: `check loads a profile strictly (an unknown or duplicate key is an error
naming the file and line), resolves extends, and enforces the rules of
docs/profiles.md ("Rules check enforces"). Errors make it exit 1; warnings
name settings that weaken the sandbox and go to stderr (exit 0).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			res := checkResult{Profile: args[0], Errors: []string{}, Warnings: []string{}}
			// The launcher refuses exactly what this calls an error: both
			// run profiles.LoadChecked.
			_, _, warns, err := profiles.LoadCheckedFrom(args[0], resolve.ProfileSearch(""))
			res.Warnings = append(res.Warnings, warns...)
			var ce *profiles.CheckError
			if errors.As(err, &ce) {
				for _, e := range ce.Errs {
					for _, m := range splitJoined(e) {
						res.Errors = append(res.Errors, "profile "+args[0]+": "+m)
					}
				}
			} else if err != nil {
				res.Errors = append(res.Errors, splitJoined(err)...) // names file and line
			}
			res.Valid = len(res.Errors) == 0
			if asJSON {
				if err := writeJSONOut(cmd.OutOrStdout(), res); err != nil {
					return err
				}
			} else {
				for _, w := range res.Warnings {
					fmt.Fprintf(cmd.ErrOrStderr(), "fedmem: warning: %s\n", w)
				}
			}
			if !res.Valid {
				if !asJSON {
					for _, e := range res.Errors {
						fmt.Fprintf(cmd.ErrOrStderr(), "fedmem: %s\n", e)
					}
				}
				return &exitError{Code: exitFailure, Err: fmt.Errorf("profile %s is invalid", args[0]), Silent: asJSON}
			}
			if !asJSON {
				fmt.Fprintf(cmd.OutOrStdout(), "profile %s: ok (%d warnings)\n", args[0], len(res.Warnings))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON on stdout")
	return cmd
}

// splitJoined turns an errors.Join into one message per line. The YAML
// decoder's "SRC: yaml: unmarshal errors:" header is folded into each of its
// "line N: ..." lines, so that every message names the file and the line.
func splitJoined(err error) []string {
	var out []string
	head := ""
	for _, l := range strings.Split(err.Error(), "\n") {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		if h, ok := strings.CutSuffix(l, "yaml: unmarshal errors:"); ok {
			head = h
			continue
		}
		if head != "" && strings.HasPrefix(l, "line ") {
			l = head + l
		}
		out = append(out, l)
	}
	return out
}

func newProfileExplainCmd() *cobra.Command {
	var asJSON bool
	var vaultFlag, workdir string
	cmd := &cobra.Command{
		Use:   "explain NAME|FILE",
		Short: "Print the mount plan a profile produces for a vault and workdir",
		Long: `explain computes the mount plan fedmem-run would build for the profile,
the vault (--vault, default $FEDMEM_VAULT) and the workdir (--workdir,
default the current directory), with $HOME as the home directory. Without a
vault it uses the placeholder ` + placeholderVault + ` and says so. The
session id is the placeholder ` + explainSession + `: fedmem-run picks a new one
per run. Masks of secrets absent on this host are left out, as fedmem-run
does. The plan is the caller's (a profile's run_as is not applied). It is
computed by the same code as fedmem-run's (package profiles/resolve); for
the sandbox layers as well, run "fedmem-run --explain".`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := resolve.Resolve(resolve.Options{
				Profile: args[0], Vault: vaultFlag, Placeholder: placeholderVault,
				Workdir: workdir, Session: explainSession, Caller: true,
			})
			if err != nil {
				return err
			}
			return resolve.Explain(cmd.OutOrStdout(), s, resolve.ExplainOptions{JSON: asJSON, Width: resolve.OutputWidth(cmd.OutOrStdout())})
		},
	}
	f := cmd.Flags()
	f.StringVar(&vaultFlag, "vault", os.Getenv("FEDMEM_VAULT"), "vault directory (default $FEDMEM_VAULT; a placeholder when empty)")
	f.StringVar(&workdir, "workdir", "", "working directory (default: the current directory)")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func writeJSONOut(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
