package mounts

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/moby/sys/mountinfo"

	"github.com/fedmem/fedmem/vault"
)

// NoteHostReadOnly reads the host's mount table (the text of
// /proc/self/mountinfo in the launcher's mount namespace) and records in
// pl.HostReadOnly where, inside, each mount that is read-only on the host
// and visible at or under a writable bind's source appears. A writable bind
// shows the host's tree with the host's flags (the backends clone it
// recursively and clear no read-only flag): a read-only alias of the vault
// mounted in the project, or any read-only bind there, stays read-only
// inside, and Verify refuses a root where one is not (issue 22).
//
// A point covered by a later writable plan mount (a profile path, the
// inbox, a tmpfs) is left to that mount: the plan put it there on purpose.
func NoteHostReadOnly(pl *Plan, r io.Reader) error {
	infos, err := parseMountinfo(r)
	if err != nil {
		return fmt.Errorf("host mountinfo: %w", err)
	}
	NoteHostReadOnlyIn(pl, infos)
	return nil
}

// NoteHostReadOnlyIn is NoteHostReadOnly on a mount table already parsed.
func NoteHostReadOnlyIn(pl *Plan, infos []*mountinfo.Info) {
	pl.HostReadOnly = nil
	seen := map[string]bool{}
	for i, m := range pl.Mounts {
		if m.Kind != BindRW || m.Source == "" {
			continue
		}
		var points []string
		if top := reached(infos, m.Source); top != nil && readOnly(top) {
			points = append(points, m.Source)
		}
		for _, h := range infos {
			// A mount hidden by another (stacked on it, or over a directory
			// above it) is not what a lookup reaches: the one serving its
			// mount point is judged instead.
			if h.Mountpoint == m.Source || !vault.Within(h.Mountpoint, m.Source) || slices.Contains(points, h.Mountpoint) {
				continue
			}
			if s := reached(infos, h.Mountpoint); s != nil && s.Mountpoint == h.Mountpoint && readOnly(s) {
				points = append(points, h.Mountpoint)
			}
		}
		for _, p := range points {
			in := m.Target + strings.TrimPrefix(p, m.Source)
			if seen[in] || coveredLater(pl, i, in) {
				continue
			}
			seen[in] = true
			pl.HostReadOnly = append(pl.HostReadOnly, in)
		}
	}
}

// coveredLater reports whether a writable plan mount listed after the i-th
// is mounted at or above the inside path p.
func coveredLater(pl *Plan, i int, p string) bool {
	for _, m := range pl.Mounts[i+1:] {
		switch m.Kind {
		case BindRW, Tmpfs, Dev, Proc:
			if vault.Within(p, m.Target) {
				return true
			}
		}
	}
	return false
}

// verifyHostReadOnly: every point of pl.HostReadOnly is served by a
// read-only mount inside.
func verifyHostReadOnly(pl *Plan, infos []*mountinfo.Info) error {
	for _, p := range pl.HostReadOnly {
		if m := reached(infos, p); m == nil || !readOnly(m) {
			return &VerifyError{Path: p, Rule: "host-readonly", Detail: "read-only on the host, writable inside: " + describe(m)}
		}
	}
	return nil
}
