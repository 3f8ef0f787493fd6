package host

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/sys/mountinfo"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/vault"
)

// Alias is mounts.Alias: another path the host shows a folder at.
type Alias = mounts.Alias

// MountTable is this process's mount table, read once
// (/proc/self/mountinfo): a plan asks it for the aliases of several
// folders and for the mirrors of the root.
type MountTable struct{ infos []*mountinfo.Info }

// ReadMountTable reads the mount table; an empty one (no alias, no
// mirror) when it cannot be read.
func ReadMountTable() *MountTable { return &MountTable{readMounts()} }

// Aliases returns the aliases of the folder p (absolute, links resolved)
// the table shows. See mounts.Alias for what each carries: the path it is
// at, and the path it is judged as.
func (t *MountTable) Aliases(p string) []Alias {
	if t == nil || t.infos == nil {
		return nil
	}
	return aliasesFrom(t.infos, p)
}

// Mirrors returns the folders that show the whole root filesystem at
// another path (mount --bind / VIEW, a container runtime's rootfs bound
// from /, a btrfs top-level subvolume's copy of the root subvolume).
func (t *MountTable) Mirrors() []string {
	if t == nil || t.infos == nil {
		return nil
	}
	return mirrorBases(t.infos)
}

// NoteHostReadOnly is mounts.NoteHostReadOnly on this table (the plan's
// writable sources' read-only mounts, from the same reading of the table
// the plan's aliases came from); false when the table could not be read
// (the caller reads it itself and says why).
func (t *MountTable) NoteHostReadOnly(pl *mounts.Plan) bool {
	if t == nil || t.infos == nil {
		return false
	}
	mounts.NoteHostReadOnlyIn(pl, t.infos)
	return true
}

func readMounts() []*mountinfo.Info {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	infos, err := mountinfo.GetMountsFromReader(f, nil)
	if err != nil {
		return nil
	}
	return infos
}

// region is what a folder shows of one filesystem: a device and a path
// within it; held marks content of a mount point below the folder.
type region struct {
	major, minor int
	path         string
	held         bool
}

// rootMount is the mount at /, the last one mounted there.
func rootMount(infos []*mountinfo.Info) *mountinfo.Info {
	var root *mountinfo.Info
	for _, m := range infos {
		if m.Mountpoint == "/" {
			root = m
		}
	}
	return root
}

// mirrorBases are the paths at which another mount of the root's
// filesystem shows the root's whole tree: its mount point, plus the root's
// own subvolume path when the mount shows more (btrfs' /mnt/btr_pool
// holds the root subvolume at /mnt/btr_pool/@).
func mirrorBases(infos []*mountinfo.Info) []string {
	root := rootMount(infos)
	if root == nil {
		return nil
	}
	var out []string
	for _, m := range infos {
		if m == root || m.Major != root.Major || m.Minor != root.Minor || !vault.Within(root.Root, m.Root) {
			continue
		}
		out = append(out, filepath.Join(m.Mountpoint, strings.TrimPrefix(root.Root, m.Root)))
	}
	return out
}

// role is the path q has in the root tree a mirror shows (the deepest
// mirror holding it), or q itself.
func role(bases []string, q string) string {
	best := ""
	for _, b := range bases {
		if vault.Within(q, b) && len(b) > len(best) {
			best = b
		}
	}
	if best == "" || best == "/" {
		return q
	}
	return filepath.Join("/", strings.TrimPrefix(q, best))
}

func aliasesFrom(infos []*mountinfo.Info, p string) []Alias {
	p = filepath.Clean(p)
	bases := mirrorBases(infos)
	// The mount that serves p: the deepest mount point at or above it,
	// the last one mounted there.
	var serving *mountinfo.Info
	for _, m := range infos {
		if vault.Within(p, m.Mountpoint) && (serving == nil || len(m.Mountpoint) >= len(serving.Mountpoint)) {
			serving = m
		}
	}
	if serving == nil {
		return nil
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(p, serving.Mountpoint), "/")
	regions := []region{{serving.Major, serving.Minor, filepath.Join(serving.Root, rel), false}}
	for _, m := range infos {
		if m.Mountpoint != p && vault.Within(m.Mountpoint, p) {
			regions = append(regions, region{m.Major, m.Minor, m.Root, true})
		}
	}
	seen := map[Alias]bool{}
	var out []Alias
	add := func(a Alias) {
		if (a.Path == p && a.As == p && !a.Holds) || seen[a] {
			return
		}
		seen[a] = true
		out = append(out, a)
	}
	root := rootMount(infos)
	for _, r := range regions {
		// A bind of a folder of a filesystem (mountinfo's root field) is
		// judged as the path it has there: a container's /host/etc, bound
		// from the node's disk, is /etc. The root's own subvolume path
		// (btrfs' /@) is no such folder.
		if !(root != nil && r.major == root.Major && r.minor == root.Minor && vault.Within(r.path, root.Root)) && r.path != "/" {
			add(Alias{As: r.path, Holds: r.held})
		}
		for _, m := range infos {
			if m.Major != r.major || m.Minor != r.minor || kernelView(m.Mountpoint) {
				continue
			}
			var a Alias
			switch {
			case vault.Within(r.path, m.Root):
				a = Alias{Path: filepath.Join(m.Mountpoint, strings.TrimPrefix(strings.TrimPrefix(r.path, m.Root), "/")), Holds: r.held}
			case vault.Within(m.Root, r.path):
				a = Alias{Path: m.Mountpoint, Holds: true}
			default:
				continue
			}
			a.As = role(bases, a.Path)
			add(a)
		}
	}
	return out
}

// kernelView says whether a mount point lies in the kernel's own trees.
func kernelView(mp string) bool {
	for _, d := range []string{"/proc", "/sys", "/dev"} {
		if vault.Within(mp, d) {
			return true
		}
	}
	return false
}
