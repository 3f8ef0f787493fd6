package main

import (
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fedmem/fedmem/profiles"
	"github.com/fedmem/fedmem/profiles/resolve"
)

// bashShim defines the two bash-completion helpers cobra's bash script
// calls when they are missing: without the bash-completion package (a
// minimal Debian, a container, `bash --norc`) its fallback
// __fedmem_init_completion calls _get_comp_words_by_ref, and file
// completion calls _filedir, and every TAB printed "command not found".
// Each is defined only when the package has not defined it; they do the
// little cobra needs (no re-joining of words split at '=' or ':').
const bashShim = `# Without the bash-completion package: the helpers the script below uses.
if ! declare -F _get_comp_words_by_ref >/dev/null 2>&1; then
_get_comp_words_by_ref() {
    while [[ $# -gt 0 && $1 == -* ]]; do
        case $1 in -n|-i|-w) shift 2;; *) shift;; esac
    done
    local v
    for v in "$@"; do
        case $v in
        cur) cur=${COMP_WORDS[COMP_CWORD]};;
        prev) prev=${COMP_WORDS[COMP_CWORD-1]};;
        words) words=("${COMP_WORDS[@]}");;
        cword) cword=$COMP_CWORD;;
        esac
    done
}
fi
if ! declare -F _filedir >/dev/null 2>&1; then
_filedir() {
    local IFS=$'\n'
    if [[ ${1-} == -d ]]; then
        COMPREPLY+=($(compgen -d -- "${cur-}"))
    else
        COMPREPLY+=($(compgen -f -- "${cur-}"))
    fi
}
fi
`

// newCompletionCmd replaces cobra's default `completion` command: the same
// scripts, with bashShim before the bash one.
func newCompletionCmd(root *cobra.Command) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "completion",
		Short: "Print a shell completion script (bash, zsh, fish or powershell)",
		Long: `completion prints a completion script for fedmem. The bash script works with or
without the bash-completion package. Profile names (built-in, ./.fedmem/profiles,
~/.config/fedmem/profiles, /etc/fedmem/profiles) complete where a command takes one.

  source <(fedmem completion bash)
  fedmem completion bash > /usr/share/bash-completion/completions/fedmem`,
	}
	for _, sh := range []struct {
		name string
		gen  func(io.Writer) error
	}{
		{"bash", func(w io.Writer) error {
			if _, err := io.WriteString(w, bashShim); err != nil {
				return err
			}
			return root.GenBashCompletionV2(w, true)
		}},
		{"zsh", root.GenZshCompletion},
		{"fish", func(w io.Writer) error { return root.GenFishCompletion(w, true) }},
		{"powershell", root.GenPowerShellCompletionWithDesc},
	} {
		gen := sh.gen
		cmd.AddCommand(&cobra.Command{
			Use:   sh.name,
			Short: "Print the " + sh.name + " completion script",
			Args:  cobra.NoArgs,
			RunE:  func(c *cobra.Command, _ []string) error { return gen(c.OutOrStdout()) },
		})
	}
	return cmd
}

// profileNames are the names a profile argument may take here: the
// built-ins and the .yaml files of the search path (the current
// directory's project folder, the user's, the system's), sorted, once
// each.
func profileNames() []string {
	seen := map[string]bool{}
	for _, n := range profiles.Builtins() {
		seen[n] = true
	}
	for _, d := range resolve.ProfileSearch("") {
		ents, _ := os.ReadDir(d.Dir)
		for _, e := range ents {
			if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok && !e.IsDir() && n != "" {
				seen[n] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// completeProfiles completes a profile NAME (and files, for a FILE).
func completeProfiles(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if strings.ContainsRune(toComplete, filepath.Separator) || strings.HasPrefix(toComplete, ".") {
		return nil, cobra.ShellCompDirectiveDefault // a path: the shell's files
	}
	var out []string
	for _, n := range profileNames() {
		if strings.HasPrefix(n, toComplete) {
			out = append(out, n)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// profileCompletions makes every `--profile` flag and the NAME|FILE
// argument of `profile show|explain|check` complete profile names.
func profileCompletions(c *cobra.Command) {
	if f := c.Flags().Lookup("profile"); f != nil {
		_ = c.RegisterFlagCompletionFunc("profile", completeProfiles)
	}
	if p := c.Parent(); p != nil && p.Name() == "profile" {
		switch c.Name() {
		case "show", "explain", "check":
			c.ValidArgsFunction = completeProfiles
		}
	}
	for _, sub := range c.Commands() {
		profileCompletions(sub)
	}
}
