package sandbox

import (
	"fmt"

	"github.com/fedmem/fedmem/mounts"
)

// DescribeLayers lists, in words, the layers the namespace backend applies
// for a plan.
func DescribeLayers(pl *mounts.Plan) []string {
	ns := "namespaces: user, mount, pid, ipc, uts, cgroup"
	switch pl.Network {
	case mounts.NetworkNone:
		ns += ", net (loopback only)"
	case mounts.NetworkAllowlist:
		ns += ", net (loopback only; out through fedmem-run's allowlist proxy at 127.0.0.1:3128 (HTTP) and 127.0.0.1:1080 (SOCKS5))"
	case mounts.NetworkPublic:
		ns += ", net (loopback only; out through fedmem-run's proxy at 127.0.0.1:3128 (HTTP) and 127.0.0.1:1080 (SOCKS5) to public addresses only)"
	case mounts.NetworkHost:
		ns += " (host network)"
	default:
		ns += ", net (loopback only)"
	}
	layers := []string{ns}
	if m := pl.ProposedWorkdir(); m != nil {
		layers = append(layers, fmt.Sprintf("workdir: propose — %s is an overlay: the real tree is its read-only lower layer, the agent's writes land in a tmpfs capped at %d bytes (limits.workdir_bytes; ENOSPC past it); nothing reaches the real tree while the agent runs; after it fedmem-run writes them as the branch fedmem/propose/SESSION on the workdir's HEAD (a patch outside Git), flags persistence-class files and prints the one command that applies them (namespace backend only)", m.Target, m.Size))
	} else {
		layers = append(layers, "workdir: direct — the agent writes the real workdir (profile `workdir: propose` makes its writes a proposal)")
	}
	layers = append(layers, DescribeView(pl)...)
	return append(append(layers,
		"mounts: verified against /proc/self/mountinfo before exec (fail closed)",
		"capabilities: none in any set (bounding, ambient, inheritable, permitted, effective); securebits locked",
		"no_new_privs: set",
		"denials: system calls the seccomp filter refuses are reported as denied events (--events) and counted in the report (Linux 5.7+: a user-notification listener in pid 1; older kernels: refused, not reported); refused file writes are not reported",
		describeIdentity(),
		"host authority: /proc/sys, /proc/sysrq-trigger, /proc/irq, /proc/bus, /proc/fs read-only; runc's masked paths masked; /proc with hidepid=invisible; /run an empty read-only directory but name resolution and the profile's unix_sockets",
	), describeFilters(pl)...)
}

// DescribeView says what `vault.view: in-force` hides and why (nothing
// without a view).
func DescribeView(pl *mounts.Plan) []string {
	v := pl.View
	if v == nil {
		return []string{"vault view: all — every note of the vault is readable, .git included (profile vault.view: in-force shows only the notes in force)"}
	}
	how := fmt.Sprintf("from the gate's manifest at %.12s; the notes shown are the gate's copies at that commit (its view tree), not the work tree: a file untracked, edited or arrived since is not shown", v.Commit)
	if v.Source == mounts.ViewPlaceholder {
		return []string{"vault view: in-force — the notes not in force (withheld, deprecated, superseded, draft, stale), .git and 99-archive/ will not exist inside; which ones is judged when a session starts on the vault"}
	}
	if v.Source == mounts.ViewFromScan {
		how = fmt.Sprintf("judged by fedmem-run from all %d notes of the live work tree (%s; a note that arrives during the session shows in it — run the gate to have its view tree used)", v.Scanned, v.Stale)
	}
	out := []string{fmt.Sprintf("vault view: in-force — %d paths of the vault do not exist inside (ENOENT), %s; folder pages list only what is shown; a note withheld during the session stays until the next one", v.Count, how)}
	for i, e := range v.Hidden {
		out = append(out, fmt.Sprintf("  hidden: %s — %s", e.Path, e.Why))
		if i == len(v.Hidden)-1 && v.Count > len(v.Hidden) {
			out = append(out, fmt.Sprintf("  … and %d more", v.Count-len(v.Hidden)))
		}
	}
	return out
}
