// Command fedmem is the trusted-side admin tool of fedmem: it creates vaults
// (init), runs the gate, lets humans review held drafts, and starts agents
// through fedmem-run (run).
//
// # Adding a subcommand
//
// Each subcommand lives in its own file of package main and registers a
// constructor from init:
//
//	func init() { subcommands = append(subcommands, newFooCmd) }
//
//	func newFooCmd() *cobra.Command {
//		return &cobra.Command{Use: "foo", Args: cobra.NoArgs, RunE: ...}
//	}
//
// newRootCmd adds every registered constructor to a fresh root, so tests can
// build as many independent trees as they like (run(args, stdout, stderr)).
//
// # Output and exit codes
//
// Results go to cmd.OutOrStdout(), everything else (progress, warnings) to
// cmd.ErrOrStderr(). Do not print errors yourself: return them from RunE and
// run prints each once, on stderr, prefixed "fedmem: ". The exit code is
// chosen in one place, exitCode:
//
//	nil                          0   success
//	any other error              1   failure (the command ran and failed)
//	usageErrorf(...)             2   bad usage; also every error cobra raises
//	                                 before a command runs (unknown command or
//	                                 flag, wrong number of arguments)
//	internalErrorf(...), panic   125 fedmem's own fault
//	&exitError{Code: n, Err: e}  n   anything else a command must report
//	                                 (fedmem run: 126 cannot execute, 127 not found)
//
// Root's PersistentPreRunE marks "the command started"; cobra.EnableTraverseRunHooks
// is on so a subcommand's own PersistentPreRunE does not hide it.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// Exit codes, the same for every subcommand. See the package documentation.
const (
	exitOK       = 0
	exitFailure  = 1
	exitUsage    = 2
	exitInternal = 125
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = ""

// subcommands holds the constructors of fedmem's subcommands; files of this
// package append to it from init().
var subcommands []func() *cobra.Command

// exitError carries a specific exit code. With Silent the error is not
// printed (the command already told the user everything).
type exitError struct {
	Code   int
	Err    error
	Silent bool
}

func (e *exitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *exitError) Unwrap() error { return e.Err }

// usageErrorf reports a usage mistake (exit code 2).
func usageErrorf(format string, args ...any) error {
	return &exitError{Code: exitUsage, Err: fmt.Errorf(format, args...)}
}

// internalErrorf reports a defect in fedmem itself (exit code 125).
func internalErrorf(format string, args ...any) error {
	return &exitError{Code: exitInternal, Err: fmt.Errorf("internal error: "+format, args...)}
}

const rootLong = `fedmem keeps a memory vault (a Git repository of Markdown notes) safe from
the code agents that read it: agents run under fedmem-run and may only drop
drafts in their session inbox; the gate, running as its own user, validates
drafts and promotes, holds or rejects them.

Exit codes:
  0    success
  1    the command failed (the message says why)
  2    bad usage: unknown command or flag, wrong arguments
  125  internal error in fedmem
  126  fedmem run: fedmem-run cannot be executed
  127  fedmem run: fedmem-run not found

Results go to stdout (--json where offered); messages go to stderr.`

// newRootCmd builds a fresh command tree. started is set once a command's
// run hooks begin, which tells usage errors from failures.
func newRootCmd(started *bool) *cobra.Command {
	cobra.EnableTraverseRunHooks = true
	root := &cobra.Command{
		Use:           "fedmem",
		Short:         "Admin tool for fedmem memory vaults: init, gate, review, run",
		Long:          rootLong,
		Version:       buildVersion(),
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          commandArgs,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			*started = true
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(cmd.ErrOrStderr())
			_ = cmd.Help()
			return usageErrorf("a command is required")
		},
	}
	root.SetVersionTemplate("fedmem {{.Version}}\n")
	// `fedmem completion bash|zsh|fish|powershell` (make install writes
	// them): cobra's scripts, the bash one working without the
	// bash-completion package (completion.go).
	root.CompletionOptions.DisableDefaultCmd = true
	for _, f := range subcommands {
		root.AddCommand(f())
	}
	root.AddCommand(newCompletionCmd(root))
	profileCompletions(root)
	groupCommands(root)
	root.SetFlagErrorFunc(flagError)
	return root
}

func buildVersion() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// run executes fedmem with args (without the program name) and returns the
// exit code. It never panics: a panic is reported as an internal error.
func run(args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "fedmem: internal error: %v\n%s", r, debug.Stack())
			code = exitInternal
		}
	}()
	started := false
	root := newRootCmd(&started)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteC()
	if err == nil {
		return exitOK
	}
	code = exitCode(err, started)
	var ee *exitError
	if errors.As(err, &ee) && ee.Silent {
		return code
	}
	fmt.Fprintf(stderr, "fedmem: %v\n", err)
	if code == exitUsage {
		path := "fedmem"
		if cmd != nil {
			path = cmd.CommandPath()
		}
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", strings.TrimSpace(path))
	}
	return code
}

// exitCode maps an error to the process exit code. started says whether a
// command's run hooks had begun; errors before that come from cobra parsing
// the command line.
func exitCode(err error, started bool) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	if !started {
		return exitUsage
	}
	return exitFailure
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
