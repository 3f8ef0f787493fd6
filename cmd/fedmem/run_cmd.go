package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"
)

func init() {
	subcommands = append(subcommands, newRunCmd)
}

// runnerName is the untrusted-side launcher that `fedmem run` hands over to.
const runnerName = "fedmem-run"

func newRunCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "run [fedmem-run flags] -- COMMAND [ARGS...]",
		Short: "Run an agent in the sandbox (hands over to fedmem-run)",
		Long: `run replaces itself with fedmem-run, passing every argument through
unchanged: "fedmem run --profile ci -- claude -p hi" is exactly
"fedmem-run --profile ci -- claude -p hi". fedmem-run is looked for next to
this fedmem binary first, then on $PATH. See "fedmem-run --help" for its flags.

Exit codes: those of fedmem-run (the agent's own, or 125 for a fedmem error);
126 if fedmem-run cannot be executed, 127 if it is not found.`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			path, err := findRunner()
			if err != nil {
				return &exitError{Code: 127, Err: err}
			}
			argv := append([]string{runnerName}, args...)
			// On success Exec never returns: the process becomes fedmem-run
			// with the same pid, terminal, signals and environment.
			err = syscall.Exec(path, argv, os.Environ())
			return &exitError{Code: 126, Err: fmt.Errorf("exec %s: %w", path, err)}
		},
	}
}

// findRunner returns fedmem-run next to this executable, else from $PATH.
// The sibling wins so that an installed pair always runs together.
func findRunner() (string, error) {
	var tried string
	if self, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(self); err == nil {
			self = real
		}
		p := filepath.Join(filepath.Dir(self), runnerName)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		} else if err == nil || !errors.Is(err, fs.ErrNotExist) {
			tried = fmt.Sprintf(" (%s exists but is not an executable file)", p)
		}
		tried = fmt.Sprintf("%s%s", p, tried)
	}
	p, err := exec.LookPath(runnerName)
	if err != nil {
		return "", fmt.Errorf("%s not found: not at %s, nor on $PATH", runnerName, tried)
	}
	return p, nil
}
