package mounts

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/moby/sys/mountinfo"

	"github.com/fedmem/fedmem/mounts/request"
)

// ReadOnly re-binds Target onto itself read-only: the kernel knobs of
// procfs (/proc/sys, /proc/sysrq-trigger…) stay readable and refuse writes
// with EROFS, whatever the agent's uid and whether or not Landlock exists.
const ReadOnly Kind = "ro-self"

// ProcReadOnly are the procfs paths runc makes read-only (its default
// readonlyPaths): writing them is host authority (sysctls, SysRq, IRQ
// affinity, bus and filesystem knobs).
var ProcReadOnly = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}

// ProcMasked are the paths runc masks (its default maskedPaths): kernel
// memory, keys, timers and scheduler internals that leak host state.
var ProcMasked = []string{
	"/proc/acpi", "/proc/asound", "/proc/interrupts", "/proc/kcore", "/proc/keys",
	"/proc/latency_stats", "/proc/sched_debug", "/proc/scsi", "/proc/timer_list",
	"/proc/timer_stats", "/sys/devices/virtual/powercap", "/sys/firmware",
}

// RunDirs are where host daemons put their pathname unix sockets (docker,
// systemd, D-Bus, containerd…). Each that exists as a real directory is an
// empty read-only directory inside the sandbox.
var RunDirs = []string{"/run", "/var/run"}

// SharedTmpDirs are the host's world-writable scratch directories besides
// /tmp: any local user (or a daemon) may leave a socket or FIFO there that
// the agent's uid may write. Each that is a real directory is a fresh,
// private, writable tmpfs inside (like /tmp): nothing of the host's exists
// there, but for the plan's own binds and the unix_sockets listed under it.
var SharedTmpDirs = []string{"/var/tmp"}

// SharedHiddenDirs are other shared directories where sockets and FIFOs
// collect (crash reporters' and lock directories, 1777 on some hosts):
// each that is a real directory is an empty read-only directory inside.
var SharedHiddenDirs = []string{"/var/crash", "/var/lock"}

// ResolverDirs are the directories under /run that name resolution reads
// (resolv.conf targets); they are bound back read-only under a hidden /run.
var ResolverDirs = []string{"/run/systemd/resolve", "/run/resolvconf", "/run/NetworkManager"}

// addHostAuthority adds the mounts of guarantee 5 that do not depend on
// the profile's paths: procfs knobs read-only, procfs leaks masked, /run
// hidden but for name resolution and the profile's unix_sockets. Call it
// right after the Proc and Tmpfs mounts.
func addHostAuthority(pl *Plan, rq *request.Request, in Input, exists func(string) (bool, bool)) {
	pl.AcceptRisks = append([]string{}, rq.AcceptRisks...)
	for _, r := range rq.AcceptRisks {
		pl.Warnings = append(pl.Warnings, "accept_risks: "+r+" (the profile accepts a weaker sandbox by name)")
	}
	for _, t := range ProcReadOnly {
		if ok, isDir := exists(t); ok {
			pl.Mounts = append(pl.Mounts, Mount{Kind: ReadOnly, Source: t, Target: t, Dir: isDir, Why: "kernel knob, read-only (runc readonlyPaths)"})
		}
	}
	for _, t := range ProcMasked {
		if ok, isDir := exists(t); ok {
			pl.Mounts = append(pl.Mounts, Mount{Kind: Masked, Target: t, Dir: isDir, Why: "kernel state, masked (runc maskedPaths)"})
		}
	}
	var hidden []string
	for _, d := range RunDirs {
		ok, isDir := exists(d)
		if !ok || !isDir {
			continue
		}
		if d != "/run" && (in.RealPath == nil || in.RealPath(d) != d) {
			// A link to another (hidden) one, /var/run -> /run, or unknown:
			// a mount point must not be a link.
			continue
		}
		hidden = append(hidden, d)
		pl.Mounts = append(pl.Mounts, Mount{Kind: Hidden, Target: d, Dir: true, Why: "host daemons' unix sockets hidden (profile: unix_sockets binds some back)"})
	}
	realDir := func(d string) bool {
		ok, isDir := exists(d)
		return ok && isDir && in.RealPath != nil && in.RealPath(d) == d
	}
	for _, d := range SharedTmpDirs {
		if realDir(d) {
			hidden = append(hidden, d)
			pl.Mounts = append(pl.Mounts, Mount{Kind: Tmpfs, Target: d, Dir: true, Size: rq.TmpBytes, Why: "shared scratch directory: a private tmpfs, the host's sockets and FIFOs there do not exist inside"})
			pl.Writable = append(pl.Writable, d)
		}
	}
	for _, d := range SharedHiddenDirs {
		if realDir(d) {
			hidden = append(hidden, d)
			pl.Mounts = append(pl.Mounts, Mount{Kind: Hidden, Target: d, Dir: true, Why: "shared directory: the host's sockets and FIFOs there do not exist inside"})
		}
	}
	under := func(t string) bool {
		return slices.ContainsFunc(hidden, func(h string) bool { return t == h || strings.HasPrefix(t, h+"/") })
	}
	keep := append([]string{}, ResolverDirs...)
	if in.ResolvConf != "" {
		keep = append(keep, filepath.Dir(in.ResolvConf))
	}
	seen := map[string]bool{}
	for _, t := range keep {
		t = filepath.Clean(t)
		if seen[t] || !under(t) {
			continue
		}
		seen[t] = true
		if ok, isDir := exists(t); ok {
			pl.Mounts = append(pl.Mounts, Mount{Kind: BindRO, Source: t, Target: t, Dir: isDir, Why: "name resolution"})
		}
	}
	for _, s := range rq.UnixSockets {
		s = filepath.Clean(s)
		if r, linked := socketLinked(in, s); linked {
			pl.Warnings = append(pl.Warnings, fmt.Sprintf("unix_sockets %s: the path goes through a symbolic link (it resolves to %s), not bound (rule %s: a link in a folder someone else may write would choose what the bind shows the agent; list the socket's real path)", s, r, RuleSocketNoLink))
			continue
		}
		ok, isDir := exists(s)
		if !ok || isDir {
			pl.Warnings = append(pl.Warnings, fmt.Sprintf("unix_sockets %s: no such socket on this host, not bound", s))
			continue
		}
		if !under(s) {
			continue // not hidden: the agent's uid and groups decide (DAC)
		}
		pl.Mounts = append(pl.Mounts, Mount{Kind: BindRO, Source: s, Target: s, Idmap: true, Why: WhyListedSocket})
	}
}

// verifyHostAuthority checks the live mount table for the mounts
// addHostAuthority planned (fail closed): each ReadOnly and Hidden path is
// served by a read-only mount at exactly that path.
func verifyHostAuthority(pl *Plan, infos []*mountinfo.Info) error {
	for _, pm := range pl.Mounts {
		rule := ""
		switch pm.Kind {
		case ReadOnly:
			rule = "kernel-knob-readonly"
		case Hidden:
			rule = "hidden-readonly"
		default:
			continue
		}
		if m := serving(infos, pm.Target); m == nil || m.Mountpoint != pm.Target || !readOnly(m) {
			return &VerifyError{Path: pm.Target, Rule: rule, Detail: describe(m)}
		}
	}
	return nil
}
