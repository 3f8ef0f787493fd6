package main

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/fedmem/fedmem/profiles"
)

// A mistyped command or flag is a usage error (exit 2) that says what was
// meant. Cobra suggests only for the root's own legacy argument check;
// `fedmem review lst` printed review's help and exited 0, and `fedmem gate
// onse --vault V` complained about --vault instead of onse.

// commandArgs refuses an argument where cmd takes a subcommand, with the
// nearest subcommand names.
func commandArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's own default, which SuggestionsFor does not apply
	}
	return usageErrorf("unknown command %q for %q%s", args[0], cmd.CommandPath(), didYouMean(cmd.SuggestionsFor(args[0])))
}

func didYouMean(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return "; did you mean " + strings.Join(s, " or ") + "?"
}

// groupCommands makes every command that only groups subcommands (review,
// gate, profile…) refuse an unknown one with exit 2 and suggestions, and a
// bare call with its help on stderr and exit 2. Unknown flags are let
// through to that check: the unknown command is the mistake to report.
func groupCommands(c *cobra.Command) {
	for _, sub := range c.Commands() {
		if sub.HasSubCommands() {
			// A group's own RunE, where it has one, only says that a
			// subcommand is required (profile, render).
			sub.Args = commandArgs
			sub.FParseErrWhitelist.UnknownFlags = true
			if sub.Run == nil && sub.RunE == nil {
				sub.RunE = func(cmd *cobra.Command, args []string) error {
					cmd.SetOut(cmd.ErrOrStderr())
					_ = cmd.Help()
					return usageErrorf("%s needs a subcommand", cmd.CommandPath())
				}
			}
		}
		groupCommands(sub)
	}
}

// flagError is the root's flag error function: an unknown flag names the
// nearest flags the command has.
func flagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	name, ok := strings.CutPrefix(msg, "unknown flag: --")
	if !ok {
		return usageErrorf("%w", err)
	}
	var near []string
	seen := map[string]bool{}
	visit := func(f *pflag.Flag) {
		if !seen[f.Name] && (profiles.EditDistance(name, f.Name) <= 2 || (len(name) > 2 && strings.HasPrefix(f.Name, name))) {
			seen[f.Name] = true
			near = append(near, "--"+f.Name)
		}
	}
	cmd.Flags().VisitAll(visit)
	cmd.InheritedFlags().VisitAll(visit)
	return usageErrorf("%s%s", msg, didYouMean(near))
}
