package profiles

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// CommandArgs maps a command's base name to arguments fedmem-run inserts
// right after it when the agent's command is that one, e.g. the codex
// profile turns Codex's own sandbox off (fedmem is its sandbox; Codex's
// bubblewrap cannot create namespaces inside fedmem's, where seccomp
// refuses them):
//
//	command_args:
//	  codex: [-c, 'sandbox_mode="danger-full-access"']
//
// The arguments are the profile's (`fedmem profile show` lists them); the
// agent sees them in its own argv.
type CommandArgs map[string][]string

// Apply returns argv with the profile's arguments for argv[0] inserted
// after it (a copy; argv itself is not changed).
func (c CommandArgs) Apply(argv []string) []string {
	if len(argv) == 0 || len(c[filepath.Base(argv[0])]) == 0 {
		return argv
	}
	extra := c[filepath.Base(argv[0])]
	out := append([]string{argv[0]}, extra...)
	return append(out, argv[1:]...)
}

func commandArgsErrors(p *Profile) []error {
	var errs []error
	names := make([]string, 0, len(p.CommandArgs))
	for k := range p.CommandArgs {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if k == "" || strings.ContainsAny(k, "/ \t") || k == "." || k == ".." {
			errs = append(errs, &RuleError{Field: "command_args", Value: k, Rule: "command-args-name",
				Msg: fmt.Sprintf("command_args: %q must be a command's base name (no slash)", k)})
		}
	}
	return errs
}

func mergeCommandArgs(parent, child CommandArgs) CommandArgs {
	if len(parent) == 0 && len(child) == 0 {
		return nil
	}
	out := CommandArgs{}
	for k, v := range parent {
		out[k] = v
	}
	for k, v := range child {
		out[k] = v
	}
	return out
}
