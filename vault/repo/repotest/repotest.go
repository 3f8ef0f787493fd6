package repotest

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
)

// Git runs git in dir and returns its stdout; the error carries stderr.
func Git(dir string, args ...string) (string, error) {
	out, _, err := git(dir, args...)
	return out, err
}

func git(dir string, args ...string) (stdout, stderr string, err error) {
	full := append([]string{"--no-optional-locks", "-c", "safe.directory=*", "-C", dir}, args...)
	cmd := exec.Command("git", full...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return out.String(), errb.String(), fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), errb.String(), nil
}

// FsckStrict runs `git fsck --strict --no-dangling` and fails on any finding,
// printed or not.
func FsckStrict(dir string) error {
	out, errOut, err := git(dir, "fsck", "--strict", "--no-dangling", "--no-progress")
	if err != nil {
		return err
	}
	if s := strings.TrimSpace(out + errOut); s != "" {
		return fmt.Errorf("git fsck --strict: %s", s)
	}
	return nil
}

// Clean fails unless `git status --porcelain` prints nothing.
func Clean(dir string) error {
	out, err := Git(dir, "status", "--porcelain", "--untracked-files=all")
	if err != nil {
		return err
	}
	if s := strings.TrimSpace(out); s != "" {
		return fmt.Errorf("git status is not clean:\n%s", s)
	}
	return nil
}
