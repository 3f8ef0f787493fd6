package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/fedmem/fedmem/test/testutil"
	"github.com/fedmem/fedmem/vault/repo"
)

func runFedmem(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

func TestInitCommand(t *testing.T) {
	dir := filepath.Join(testutil.TempDir(t), "vault")
	code, out, errOut := runFedmem("init", "--json", dir)
	if code != 0 || errOut != "" {
		t.Fatalf("init: code %d, stderr %q", code, errOut)
	}
	var res repo.Result
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	if !res.Created || res.Dir != dir || res.Commit == "" || res.Head != res.Commit || res.InboxMode != "01777" {
		t.Errorf("result %+v", res)
	}

	code, out, errOut = runFedmem("init", dir)
	if code != 0 || errOut != "" {
		t.Fatalf("second init: code %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"Checked fedmem vault " + dir + "\n", "commit     none (HEAD " + res.Head[:12] + ")", "repairs    none: everything was in place"} {
		if !strings.Contains(out, want) {
			t.Errorf("second init output lacks %q:\n%s", want, out)
		}
	}

	if err := os.WriteFile(filepath.Join(dir, "00-global", "RULES.md"), []byte("edited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runFedmem("init", dir)
	if code != 0 || errOut != "fedmem: warning: 00-global/RULES.md differs from HEAD: edited outside the gate; left as it is (see git diff)\n" {
		t.Errorf("edited contract: code %d, stderr %q", code, errOut)
	}

	fresh := filepath.Join(testutil.TempDir(t), "v2")
	code, out, _ = runFedmem("init", fresh)
	if code != 0 || !strings.Contains(out, "Created fedmem vault "+fresh+"\n") || !strings.Contains(out, "by fedmem-gate <gate@fedmem.invalid> (16 files)") ||
		!strings.Contains(out, "run them with: fedmem-run --vault "+fresh+" -- <agent>\n") {
		t.Errorf("human output (code %d):\n%s", code, out)
	}
}

func TestExitCodes(t *testing.T) {
	notVault := testutil.TempDir(t)
	if err := os.WriteFile(filepath.Join(notVault, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	saved := subcommands
	t.Cleanup(func() { subcommands = saved })
	subcommands = append(subcommands[:len(subcommands):len(subcommands)],
		func() *cobra.Command {
			return &cobra.Command{Use: "t-panic", RunE: func(*cobra.Command, []string) error { panic("boom") }}
		},
		func() *cobra.Command {
			return &cobra.Command{Use: "t-fail", RunE: func(*cobra.Command, []string) error { return errors.New("it broke") }}
		},
		func() *cobra.Command {
			return &cobra.Command{Use: "t-internal", RunE: func(*cobra.Command, []string) error { return internalErrorf("bad state %d", 3) }}
		},
		func() *cobra.Command {
			return &cobra.Command{Use: "t-code", RunE: func(*cobra.Command, []string) error {
				return &exitError{Code: 7, Err: errors.New("seven")}
			}}
		},
		func() *cobra.Command {
			// A subcommand with its own hook must not turn failures into usage errors.
			return &cobra.Command{Use: "t-hook",
				PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
				RunE:              func(*cobra.Command, []string) error { return errors.New("hooked failure") }}
		},
	)
	for _, tc := range []struct {
		args    []string
		code    int
		stdout  string // substring; "" means stdout must be empty
		stderr  string // substring; "" means stderr must be empty
		notUsed bool
	}{
		{args: []string{"--version"}, code: 0, stdout: "fedmem "},
		{args: []string{"--help"}, code: 0, stdout: "Exit codes:\n  0    success"},
		{args: []string{"init", "--help"}, code: 0, stdout: "Usage:\n  fedmem init DIR [flags]"},
		{args: nil, code: 2, stderr: "fedmem: a command is required\nRun 'fedmem --help' for usage."},
		{args: []string{"bogus"}, code: 2, stderr: `fedmem: unknown command "bogus" for "fedmem"`},
		// Issue 23: a typo is exit 2 with what was meant, in every group.
		{args: []string{"reviw"}, code: 2, stderr: `fedmem: unknown command "reviw" for "fedmem"; did you mean review?`},
		{args: []string{"review", "lst"}, code: 2, stderr: `fedmem: unknown command "lst" for "fedmem review"; did you mean list?`},
		{args: []string{"review", "--vault", notVault, "lst"}, code: 2, stderr: `unknown command "lst" for "fedmem review"; did you mean list?`},
		{args: []string{"gate", "onse", "--vault", notVault}, code: 2, stderr: `fedmem: unknown command "onse" for "fedmem gate"; did you mean once?`},
		{args: []string{"gate"}, code: 2, stderr: "fedmem: fedmem gate needs a subcommand"},
		{args: []string{"profile", "chek"}, code: 2, stderr: `did you mean check?`},
		{args: []string{"audit", "verfy"}, code: 2, stderr: `did you mean verify?`},
		{args: []string{"init", "--gate-usr", "x", notVault}, code: 2, stderr: "fedmem: unknown flag: --gate-usr; did you mean --gate-user?"},
		{args: []string{"init"}, code: 2, stderr: "fedmem: init takes exactly one argument, the vault directory (got 0)\nRun 'fedmem init --help' for usage."},
		{args: []string{"init", "a", "b"}, code: 2, stderr: "(got 2)"},
		{args: []string{"init", "--nope", "x"}, code: 2, stderr: "unknown flag: --nope"},
		{args: []string{"init", "--gate-user", "no-such-user-fedmem", notVault}, code: 2, stderr: `--gate-user: user "no-such-user-fedmem": unknown user or group`},
		{args: []string{"init", "--agent-group", "4294967295", notVault}, code: 2, stderr: `--agent-group: group "4294967295": id out of range`},
		{args: []string{"init", notVault}, code: 1, stderr: "fedmem: refusing to initialise " + notVault + ": directory is not empty and is not a fedmem vault (found: notes.txt)"},
		{args: []string{"t-fail"}, code: 1, stderr: "fedmem: it broke\n"},
		{args: []string{"t-hook"}, code: 1, stderr: "fedmem: hooked failure\n"},
		{args: []string{"t-internal"}, code: 125, stderr: "fedmem: internal error: bad state 3"},
		{args: []string{"t-panic"}, code: 125, stderr: "fedmem: internal error: boom"},
		{args: []string{"t-code"}, code: 7, stderr: "fedmem: seven"},
	} {
		code, out, errOut := runFedmem(tc.args...)
		name := strings.Join(tc.args, " ")
		if code != tc.code {
			t.Errorf("fedmem %s: exit %d, want %d (stderr %q)", name, code, tc.code, errOut)
		}
		if (tc.stdout == "") != (out == "") || !strings.Contains(out, tc.stdout) {
			t.Errorf("fedmem %s: stdout %q, want %q", name, out, tc.stdout)
		}
		if (tc.stderr == "") != (errOut == "") || !strings.Contains(errOut, tc.stderr) {
			t.Errorf("fedmem %s: stderr %q, want %q", name, errOut, tc.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(notVault, ".git")); err == nil {
		t.Error("refused init created .git")
	}
}

// buildFedmem builds this command into a fresh directory every user can read.
func buildFedmem(t *testing.T) string {
	t.Helper()
	dir := testutil.TempDir(t)
	bin := filepath.Join(dir, "fedmem")
	cmd := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestRunExecsFedmemRun: `fedmem run` becomes the fedmem-run found next to
// it (same pid: exec, not a child), with the arguments untouched.
func TestRunExecsFedmemRun(t *testing.T) {
	bin := buildFedmem(t)
	t.Run("missing", func(t *testing.T) { testRunWithoutFedmemRun(t, bin) })
	dir := filepath.Dir(bin)
	runner := filepath.Join(dir, "fedmem-run")
	os.Remove(runner) // the subtest left a non-executable one
	script := "#!/bin/sh\necho \"pid=$$\"\nfor a in \"$0\" \"$@\"; do echo \"arg=$a\"; done\nexit 7\n"
	if err := os.WriteFile(runner, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--profile", "ci", "--", "echo", "a b", "--help", "")
	cmd.Env = append(os.Environ(), "PATH=/nonexistent")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("exit: %v (stderr %q), want the runner's 7", err, errb.String())
	}
	want := fmt.Sprintf("pid=%d\narg=%s\narg=--profile\narg=ci\narg=--\narg=echo\narg=a b\narg=--help\narg=\n", cmd.Process.Pid, runner)
	if out.String() != want {
		t.Errorf("runner saw:\n%s\nwant:\n%s", out.String(), want)
	}
	if errb.Len() != 0 {
		t.Errorf("stderr: %q", errb.String())
	}
}

// testRunWithoutFedmemRun: no runner next to fedmem nor on $PATH means 127.
func testRunWithoutFedmemRun(t *testing.T, bin string) {
	runner := filepath.Join(filepath.Dir(bin), "fedmem-run")
	for _, tc := range []struct {
		name, setup, want string
	}{
		{"missing", "", "fedmem: fedmem-run not found: not at " + runner + ", nor on $PATH"},
		{"not executable", "0644", "fedmem: fedmem-run not found: not at " + runner + " (" + runner + " exists but is not an executable file), nor on $PATH"},
	} {
		if tc.setup != "" {
			if err := os.WriteFile(runner, []byte("#!/bin/sh\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.Command(bin, "run", "--", "true")
		cmd.Env = append(os.Environ(), "PATH=/nonexistent")
		var errb bytes.Buffer
		cmd.Stderr = &errb
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 127 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%s: %v, stderr %q; want exit 127 and %q", tc.name, err, errb.String(), tc.want)
		}
	}
}

// TestInitAsUnprivilegedUser runs the real binary as a uid without
// CAP_CHOWN: giving the vault to another uid fails with exit 1 and says why.
func TestInitAsUnprivilegedUser(t *testing.T) {
	testutil.RequireRoot(t)
	bin := buildFedmem(t)
	parent := testutil.TempDir(t)
	if err := os.Chmod(parent, 0o777); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(parent, "v")
	cmd := exec.Command("setpriv", "--reuid", "64001", "--regid", "64001", "--clear-groups", "--",
		bin, "init", "--gate-user", "64000", dir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v, want 1 (stderr %q)", err, errb.String())
	}
	if s := errb.String(); !strings.Contains(s, "chown "+dir+" to 64000:64000: operation not permitted (run as root") {
		t.Errorf("stderr %q does not explain the refusal", s)
	}
	if out.Len() != 0 {
		t.Errorf("stdout on failure: %q", out.String())
	}
}
