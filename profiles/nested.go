package profiles

import (
	"path/filepath"
	"strings"
)

// NestedSandboxes says why an agent's own sandbox cannot start inside
// fedmem's: the seccomp filter refuses new namespaces (unshare, clone with
// CLONE_NEW*), mount and pivot_root, and no capability is left. Bubblewrap
// (Codex's Linux sandbox, Claude Code's sandbox setting), firejail, rootless
// podman and nested fedmem-run all need them.
const NestedSandboxes = "an agent's own sandbox cannot start inside fedmem (seccomp refuses new namespaces, mount and pivot_root; no capabilities): bubblewrap (Codex's sandbox, Claude Code's sandbox setting), firejail, rootless podman/docker and nested fedmem-run fail with \"No permissions to create a new namespace\" or EPERM"

// NestedSandboxNote is what --explain says about the agent's own sandbox
// for the command argv0 under profile p: the general rule, and what the
// profile does about it for that command.
func NestedSandboxNote(p *Profile, argv0 string) string {
	base := filepath.Base(argv0)
	if args := p.CommandArgs[base]; len(args) > 0 {
		return base + "'s own sandbox is off (command_args: " + strings.Join(args, " ") + "): fedmem is its sandbox; " + NestedSandboxes
	}
	switch base {
	case "codex":
		return "codex's own sandbox will fail: run it with -c sandbox_mode=\"danger-full-access\" (the codex profile does); " + NestedSandboxes
	case "claude":
		return "leave Claude Code's own sandbox setting off (it is off by default); " + NestedSandboxes
	}
	return NestedSandboxes
}
