package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Git refuses a repository another uid owns ("detected dubious ownership")
// unless safe.directory names it, and only the system, global or command
// scopes may say so: a repository's own config cannot vouch for itself. In
// the two-user layout the vault is the gate user's, so every reviewer's
// `git log` in it failed (issue 23).
//
// `fedmem init`, run as root giving the vault to a gate user, names the
// vault (its exact path, never "*") in a file fedmem owns,
// /etc/fedmem/gitconfig, and includes that file from the system config
// (/etc/gitconfig) once. Why system-wide and not per reviewer: what
// safe.directory guards against is running the owner's repository config
// (core.fsmonitor, core.pager, hooks…) as yourself; here the owner is the
// gate, trusted like fedmem's own binaries, and its repository config is
// written by nobody else (agents only ever see the vault read-only). Per
// reviewer, root would have to write into each reviewer's ~/.gitconfig.
// The scope is one path; `fedmem init --no-git-safe-directory` leaves the
// system config alone, and docs/vault.md gives the per-user command.

// gitSystemConfig is the system config file Git reads: $GIT_CONFIG_SYSTEM
// when set (Git's own override), else /etc/gitconfig.
func gitSystemConfig() string {
	if p := os.Getenv("GIT_CONFIG_SYSTEM"); p != "" {
		return p
	}
	return "/etc/gitconfig"
}

// fedmemGitConfig is the file fedmem owns beside the system config:
// /etc/fedmem/gitconfig for /etc/gitconfig.
func fedmemGitConfig(system string) string {
	return filepath.Join(filepath.Dir(system), "fedmem", "gitconfig")
}

// gitSafeResult says what addGitSafeDirectory did, for init's output.
type gitSafeResult struct {
	File     string // fedmem's file
	Included string // the system config that includes it
	Added    bool   // the vault was not listed before
}

// addGitSafeDirectory lists dir in fedmem's Git config file and includes
// that file from the system config, each only if it is not there yet. Git
// itself edits both files (`git config --file`), so their syntax and
// locking are Git's.
func addGitSafeDirectory(dir string) (gitSafeResult, error) {
	sys := gitSystemConfig()
	own := fedmemGitConfig(sys)
	res := gitSafeResult{File: own, Included: sys}
	if _, err := exec.LookPath("git"); err != nil {
		return res, fmt.Errorf("git is not installed: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(own), 0o755); err != nil {
		return res, err
	}
	have, err := gitConfigValues(own, "safe.directory")
	if err != nil {
		return res, err
	}
	if !slices.Contains(have, dir) {
		if err := gitConfigAdd(own, "safe.directory", dir); err != nil {
			return res, err
		}
		res.Added = true
	}
	// Readable by every user: it is what their Git reads.
	if err := os.Chmod(own, 0o644); err != nil {
		return res, err
	}
	inc, err := gitConfigValues(sys, "include.path")
	if err != nil {
		return res, err
	}
	if !slices.Contains(inc, own) {
		if err := gitConfigAdd(sys, "include.path", own); err != nil {
			return res, err
		}
	}
	return res, nil
}

// gitConfigValues lists key's values in file (none when the file or the
// key is absent).
func gitConfigValues(file, key string) ([]string, error) {
	if _, err := os.Stat(file); os.IsNotExist(err) {
		return nil, nil
	}
	var out, errb bytes.Buffer
	cmd := exec.Command("git", "config", "--file", file, "--get-all", key)
	cmd.Env = gitEnv()
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 1 {
			return nil, nil // the key is not set
		}
		return nil, fmt.Errorf("git config --file %s --get-all %s: %v: %s", file, key, err, strings.TrimSpace(errb.String()))
	}
	return strings.Split(strings.TrimRight(out.String(), "\n"), "\n"), nil
}

func gitConfigAdd(file, key, value string) error {
	cmd := exec.Command("git", "config", "--file", file, "--add", key, value)
	cmd.Env = gitEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git config --file %s --add %s %s: %v: %s", file, key, value, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// gitEnv is the environment of fedmem's own git config calls: no
// configuration of the caller's changes what `--file` edits.
func gitEnv() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME=/nonexistent", "LC_ALL=C"}
}
