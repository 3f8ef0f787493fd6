package landlock

import (
	"fmt"
	"strings"
)

// Rules says what the confined process may touch. Paths are absolute and
// resolved (symlinks followed) when [Apply] runs; the rule attaches to the
// inode found then, which is what Landlock checks afterwards.
type Rules struct {
	// ReadOnly hierarchies may be read, listed and executed (normally "/").
	ReadOnly []string `json:"read_only,omitempty"`
	// ReadWrite hierarchies get full access: create, write, truncate,
	// remove, rename, and move or link files between ReadWrite hierarchies
	// (inbox, workdir, /tmp, /dev/shm, an agent's config directory). A
	// non-directory listed here is treated as a ReadWriteFiles entry.
	ReadWrite []string `json:"read_write,omitempty"`
	// ReadWriteFiles may be read and written but not removed or renamed
	// (e.g. ~/.claude.json, /dev/null). Character and block devices among
	// them may also be ioctl'd.
	ReadWriteFiles []string `json:"read_write_files,omitempty"`
	// Devices are hierarchies of device nodes that may be opened read-write
	// and ioctl'd, e.g. /dev/pts, /dev/tty and /dev/ptmx for terminals.
	Devices []string `json:"devices,omitempty"`
	// UnixSockets are pathname unix sockets (or directories of them) the
	// agent may connect to although their server runs outside the domain,
	// e.g. a network proxy's socket. Others are denied from ABI 9 on.
	UnixSockets []string `json:"unix_sockets,omitempty"`
	// NetworkNone denies TCP bind and connect (UDP too on ABI ≥ 10).
	NetworkNone bool `json:"network_none,omitempty"`
}

// Status reports what [Apply] enforced.
type Status struct {
	// ABI is the Landlock ABI version the ruleset was built for: the
	// kernel's (after go-landlock's errata downgrade), capped at the
	// newest go-landlock knows. 0: no Landlock domain at all.
	ABI int `json:"abi"`
	// KernelABI is what the kernel reported, before any errata downgrade.
	KernelABI int `json:"kernel_abi"`
	// FS: filesystem access is restricted (ABI ≥ 1).
	FS bool `json:"fs"`
	// Refer: files can move and be linked between ReadWrite hierarchies
	// (ABI ≥ 2). On ABI 1 such renames always fail with EXDEV.
	Refer bool `json:"refer"`
	// Truncate: truncation is restricted like writing (ABI ≥ 3).
	Truncate bool `json:"truncate"`
	// IoctlDev: ioctl on device files opened in the domain is restricted
	// to Devices and device ReadWriteFiles (ABI ≥ 5).
	IoctlDev bool `json:"ioctl_dev"`
	// ResolveUnix: connecting to pathname unix sockets whose server is
	// outside the domain is denied, except UnixSockets (ABI ≥ 9).
	ResolveUnix bool `json:"resolve_unix"`
	// NetTCP: TCP bind/connect denied (NetworkNone and ABI ≥ 4).
	NetTCP bool `json:"net_tcp"`
	// NetUDP: UDP bind/connect/send denied (NetworkNone and ABI ≥ 10).
	NetUDP bool `json:"net_udp"`
	// ScopeAbstractUnix: connecting to abstract unix sockets outside the
	// domain is denied (ABI ≥ 6).
	ScopeAbstractUnix bool `json:"scope_abstract_unix"`
	// ScopeSignal: signalling processes outside the domain is denied
	// (ABI ≥ 6).
	ScopeSignal bool `json:"scope_signal"`
	// Skipped lists rule paths that did not exist and were left out.
	Skipped []string `json:"skipped,omitempty"`
}

// Scopes names the IPC scopes enforced, for reports.
func (s Status) Scopes() []string {
	var out []string
	if s.ScopeAbstractUnix {
		out = append(out, "abstract-unix-socket")
	}
	if s.ScopeSignal {
		out = append(out, "signal")
	}
	return out
}

// Describe renders the status for `--explain` and reports.
func (s Status) Describe() []string {
	if s.ABI == 0 {
		if s.KernelABI > 0 {
			return []string{fmt.Sprintf("landlock: not enforced (kernel ABI %d)", s.KernelABI)}
		}
		return []string{"landlock: not available on this kernel; not enforced"}
	}
	var on, off []string
	for _, f := range []struct {
		name string
		v    bool
	}{
		{"fs", s.FS}, {"refer", s.Refer}, {"truncate", s.Truncate}, {"ioctl-dev", s.IoctlDev},
		{"resolve-unix", s.ResolveUnix}, {"net-tcp", s.NetTCP}, {"net-udp", s.NetUDP},
		{"scope-abstract-unix", s.ScopeAbstractUnix}, {"scope-signal", s.ScopeSignal},
	} {
		if f.v {
			on = append(on, f.name)
		} else {
			off = append(off, f.name)
		}
	}
	out := []string{fmt.Sprintf("landlock: ABI %d (kernel %d) enforcing: %s", s.ABI, s.KernelABI, strings.Join(on, ", "))}
	if len(off) > 0 {
		out = append(out, "landlock: not enforced: "+strings.Join(off, ", "))
	}
	for _, p := range s.Skipped {
		out = append(out, "landlock: skipped missing path "+p)
	}
	return out
}
