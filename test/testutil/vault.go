package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/vault"
)

// VaultOptions shapes NewVault.
type VaultOptions struct {
	// GateUID/GateGID, when GateUID > 0, own every path of the vault (as
	// the gate user does in production); the inbox folder then gets mode
	// 1777 so that an agent uid can create its session directory.
	GateUID, GateGID int
	// Fedmem, when non-empty, is bin/fedmem: NewVault runs `fedmem init`
	// with it and falls back to the Git CLI if that command is missing.
	Fedmem string
}

// Vault is a test vault with fixtures the escape suite attacks.
type Vault struct {
	Dir string
	// Note is a committed note, relative to Dir.
	Note string
	// OtherSession is another session's inbox directory (absolute) holding
	// OtherDraft: the sandbox must hide it.
	OtherSession string
	OtherDraft   string
	// InitBy says how the vault was made: "fedmem init" or "git".
	InitBy string
}

// Protected are vault files the suite expects to exist, relative to Dir.
var Protected = []string{
	"10-projects/note.md",
	".git/config",
	".git/hooks/pre-commit",
	".git/refs/heads/main",
	".git/HEAD",
	vault.AgentContract,
}

// NewVault creates a vault in dir (which must not exist or be empty), with
// a committed note, a pre-commit hook and another session's draft.
func NewVault(t testing.TB, dir string, o VaultOptions) *Vault {
	t.Helper()
	v := &Vault{Dir: dir, Note: "10-projects/note.md", OtherSession: filepath.Join(dir, vault.InboxDir, "other-session-0001"), OtherDraft: "draft.md"}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if o.Fedmem != "" {
		if out, err := exec.Command(o.Fedmem, "init", dir).CombinedOutput(); err == nil {
			v.InitBy = "fedmem init"
		} else {
			t.Logf("fedmem init %s failed (%v), making the vault with git: %s", dir, err, strings.TrimSpace(string(out)))
		}
	}
	if v.InitBy == "" {
		v.InitBy = "git"
		if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
			mustGit(t, dir, "init", "-q", "-b", "main")
		}
		for _, f := range vault.Folders {
			mustWrite(t, filepath.Join(dir, f, "README.md"), "# "+f+"\n")
		}
		mustWrite(t, filepath.Join(dir, vault.AgentContract), "# AGENT\nRead anywhere. Write drafts only in $FEDMEM_INBOX.\n")
		mustWrite(t, filepath.Join(dir, vault.RulesFile), "# RULES\n")
	}
	mustWrite(t, filepath.Join(dir, v.Note), "---\ntype: note\n---\n# A protected note\n")
	mustWrite(t, filepath.Join(dir, "00-global/AGENT.md"), "# AGENT\nThe contract agents read.\n")
	hook := filepath.Join(dir, ".git/hooks/pre-commit")
	mustWrite(t, hook, "#!/bin/sh\nexit 0\n")
	if err := os.Chmod(hook, 0o755); err != nil {
		t.Fatal(err)
	}
	mustGit(t, dir, "add", "-A")
	mustGit(t, dir, "-c", "user.name=fedmem-gate", "-c", "user.email=gate@fedmem.invalid", "commit", "-q", "--no-verify", "-m", "test vault")
	mustWrite(t, filepath.Join(v.OtherSession, v.OtherDraft), "---\ntype: note\n---\nanother session's draft: SECRET-OTHER-SESSION\n")
	for _, p := range Protected {
		if _, err := os.Lstat(filepath.Join(dir, p)); err != nil {
			t.Fatalf("vault fixture: %v", err)
		}
	}
	if o.GateUID > 0 {
		if err := ChownTree(dir, o.GateUID, o.GateGID); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(dir, vault.InboxDir), 0o1777); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(v.OtherSession, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return v
}

// ChownTree changes the owner of root and everything under it, without
// following symlinks.
func ChownTree(root string, uid, gid int) error {
	return filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

func mustWrite(t testing.TB, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Git runs the git CLI in dir with a neutral configuration.
func Git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-c", "safe.directory=*", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func mustGit(t testing.TB, dir string, args ...string) {
	t.Helper()
	if _, err := Git(dir, args...); err != nil {
		t.Fatal(err)
	}
}

// InitCommand is `fedmem init ARGS` with a Git system config of the test's
// own ($GIT_CONFIG_SYSTEM in a temporary folder): as root with --gate-user,
// fedmem init lists the vault as safe.directory in the system config, and
// a test must never change the machine's /etc/gitconfig (other tests, and
// their controls that expect "dubious ownership", read it).
func InitCommand(t testing.TB, fedmem string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(fedmem, append([]string{"init"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_SYSTEM="+filepath.Join(TempDir(t), "gitconfig"))
	return cmd
}
