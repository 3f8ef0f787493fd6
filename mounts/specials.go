package mounts

import (
	"fmt"
	"path/filepath"

	"github.com/fedmem/fedmem/mounts/request"
	"github.com/fedmem/fedmem/vault"
)

// WhySpecial is the Why of a socket's or FIFO's mask (maskSpecials).
const WhySpecial = "unix socket or FIFO, not listed in unix_sockets"

// MaxSpecialMasks bounds how many sockets and FIFOs a plan masks (one
// mount each): past it the plan is refused, not left half-masked.
const MaxSpecialMasks = 4096

// maskSpecials masks every unix socket and FIFO of the host trees the
// plan's own binds show (workdir, profile writable paths, the allow-list
// home's entries and state; the vault is the gate's and is not scanned)
// that unix_sockets does not list: the empty read-only file is bound over
// it, so connect(2) fails (EACCES on the namespace backend's mode-0000
// file, ECONNREFUSED on a container backend's /dev/null: not a socket) and
// open(2) of a FIFO reaches no host reader or writer.
//
// Why a mask and not DAC: through the idmap the agent owns a root
// caller's files, a read-only mount does not stop connect(2), and
// Landlock does not cover pathname-socket connect on the kernels fedmem
// runs on. A socket bound after the scan is not masked (docs/threat-model.md).
//
// Only a path whose serving mount is one of the plan's binds of the same
// host path is masked: one under a mask, a hidden directory or a tmpfs
// does not exist inside.
func maskSpecials(pl *Plan, rq *request.Request, in Input, planned []Mount) error {
	trees := map[string]bool{}
	for _, m := range binds(planned) {
		trees[m.Target] = true
	}
	if len(trees) == 0 {
		return nil
	}
	if in.Specials == nil {
		pl.Warnings = append(pl.Warnings, "no scan for unix sockets and FIFOs in the workdir and home entries (plan built without a host): they are not masked")
		return nil
	}
	listed := map[string]bool{}
	for _, s := range rq.UnixSockets {
		listed[filepath.Clean(s)] = true
	}
	n := len(pl.Mounts)
	seen := map[string]bool{}
	var masks []Mount
	for i := 0; i < n; i++ {
		m := pl.Mounts[i]
		if (m.Kind != BindRO && m.Kind != BindRW) || !trees[m.Target] {
			continue
		}
		found, err := in.Specials(m.Source)
		if err != nil {
			return fmt.Errorf("%w: scan of %s for unix sockets and FIFOs: %v (rule: no socket or FIFO reachable unless listed; fedmem refuses rather than leave one unchecked)", ErrPlan, m.Target, err)
		}
		for _, f := range found {
			rel, err := filepath.Rel(m.Source, f)
			if err != nil {
				continue
			}
			t := filepath.Join(m.Target, rel)
			if listed[t] || seen[t] {
				continue
			}
			s := servingMount(pl.Mounts[:n], t)
			if s == nil || (s.Kind != BindRO && s.Kind != BindRW) {
				continue // hidden, masked or a tmpfs there: absent inside
			}
			if r, err := filepath.Rel(s.Target, t); err != nil || filepath.Join(s.Source, r) != f {
				continue // another tree serves that path; its own scan decides
			}
			seen[t] = true
			masks = append(masks, Mount{Kind: Masked, Target: t, Why: WhySpecial})
		}
	}
	if len(masks) > MaxSpecialMasks {
		return fmt.Errorf("%w: %d unix sockets and FIFOs to mask in the workdir and home entries, more than %d (rule: no socket or FIFO reachable unless listed): list the ones the agent needs in unix_sockets or remove them", ErrPlan, len(masks), MaxSpecialMasks)
	}
	pl.Mounts = append(pl.Mounts, masks...)
	return nil
}

// servingMount is the mount of ms that serves t inside the sandbox: the
// deepest target containing t, the later one among equals (stacked).
func servingMount(ms []Mount, t string) *Mount {
	var best *Mount
	for i := range ms {
		m := &ms[i]
		if !vault.Within(t, m.Target) || m.Kind == Dev || m.Kind == Proc {
			continue
		}
		if best == nil || len(m.Target) >= len(best.Target) {
			best = m
		}
	}
	return best
}

// HomeEntry is one row of the allow-list home's table (HomeTable).
type HomeEntry struct {
	// Path is relative to the home.
	Path string `json:"path"`
	// Access is "ro", "rw" or "masked" (a socket or FIFO in an entry).
	Access string `json:"access"`
	Source string `json:"source,omitempty"`
	Why    string `json:"why"`
}

// HomeTable lists what exists in an allow-list home (Plan.HomeAllowlist),
// in mount order: the entries the profile names and the masks laid over
// them. nil for another home.
func HomeTable(pl *Plan) []HomeEntry {
	if !pl.HomeAllowlist {
		return nil
	}
	var out []HomeEntry
	for _, m := range pl.Mounts {
		if m.Target == pl.Home || !vault.Within(m.Target, pl.Home) {
			continue
		}
		rel, err := filepath.Rel(pl.Home, m.Target)
		if err != nil {
			continue
		}
		e := HomeEntry{Path: rel, Why: m.Why}
		switch m.Kind {
		case BindRO:
			e.Access = "ro"
		case BindRW:
			e.Access = "rw"
		case Masked:
			e.Access = "masked"
		case Protected, Pinned:
			e.Access = "ro"
		default:
			e.Access = string(m.Kind)
		}
		if m.Source != m.Target {
			e.Source = m.Source
		}
		out = append(out, e)
	}
	return out
}
