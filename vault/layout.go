package vault

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Folders of the federated-memory architecture, in the order `fedmem init`
// creates them. Every path is relative to the vault root.
var Folders = []string{
	"00-global",
	"10-projects",
	"20-domains",
	"30-clients",
	"40-workflows",
	"50-skills",
	"50-skills/published",
	"50-skills/proposed",
	"50-skills/deprecated",
	"60-context-packs",
	"70-decisions",
	"80-agent-adapters",
	InboxDir,
	"99-archive",
}

const (
	// InboxDir is the only folder agents write to, one sub-directory per session.
	InboxDir = "90-inbox"
	// SessionsDir holds the enforcer's session records (written by fedmem-run,
	// outside anything an agent sees: the sandbox hides every entry of the
	// inbox but the session's own directory).
	SessionsDir = InboxDir + "/.sessions"
	// GateSessionsDir, in the gate's state directory, holds the gate's
	// copy of every ended session's record that carries a read receipt
	// (gate: storeSessionReceipts).
	GateSessionsDir = "sessions"
	// GlobalDir holds the contract agents read.
	GlobalDir = "00-global"
	// PolicyFile is the gate policy, read-only to agents.
	PolicyFile = GlobalDir + "/policy.yaml"
	// AgentContract is the file agents read to learn the rules.
	AgentContract = GlobalDir + "/AGENT.md"
	// RulesFile is the human-readable rule list.
	RulesFile = GlobalDir + "/RULES.md"
)

// ErrNotVault is returned when a directory is not a fedmem vault.
var ErrNotVault = errors.New("not a fedmem vault")

// IsVault reports whether dir looks like a fedmem vault: a Git repository
// with the inbox folder.
func IsVault(dir string) bool {
	if fi, err := os.Stat(filepath.Join(dir, ".git")); err != nil || !fi.IsDir() {
		return false
	}
	fi, err := os.Stat(filepath.Join(dir, InboxDir))
	return err == nil && fi.IsDir()
}

// Resolve returns the absolute, symlink-free path of a vault directory and
// checks that it is a vault.
func Resolve(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("vault %q: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("vault %q: %w", dir, err)
	}
	if !IsVault(real) {
		return "", fmt.Errorf("vault %q: %w (no .git or %s/; create one with `fedmem init %s`)", dir, ErrNotVault, InboxDir, dir)
	}
	return real, nil
}

// ValidSessionID reports whether id is a safe session directory name: ASCII
// letters, digits, '-' and '_', not starting with '.' or '-', at most 64 bytes.
func ValidSessionID(id string) bool {
	if id == "" || len(id) > 64 || id[0] == '-' {
		return false
	}
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
		default:
			return false
		}
	}
	return true
}

// InboxPath returns the session's inbox directory inside the vault.
func InboxPath(vaultDir, session string) string {
	return filepath.Join(vaultDir, InboxDir, session)
}

// Within reports whether path equals base or lies beneath it. Both must be
// clean absolute paths.
func Within(path, base string) bool {
	if path == base {
		return true
	}
	if base == "/" {
		return strings.HasPrefix(path, "/")
	}
	return strings.HasPrefix(path, base+"/")
}

// GateStateDir is where the gate keeps its private state by default (claimed
// drafts, decisions, audit log, review socket): a sibling of the vault,
// `.<name>.fedmem-gate`. Both halves need the name: the gate to use it, the
// sandbox to hide it from agents whose writable workdir would contain it.
func GateStateDir(vaultDir string) string {
	return filepath.Join(filepath.Dir(vaultDir), "."+filepath.Base(vaultDir)+".fedmem-gate")
}
