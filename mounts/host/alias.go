package host

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/moby/sys/mountinfo"

	"github.com/fedmem/fedmem/mounts"
)

// Alias is mounts.Alias: another path the host shows a folder at.
type Alias = mounts.Alias

// Aliases returns the aliases of the folder p (absolute, links resolved)
// that the mount table of this process shows, read from
// /proc/self/mountinfo; nil when it cannot be read. Mounts under /proc,
// /sys, /dev and /run are left out, and so are mounts of the whole root
// filesystem elsewhere: a container runtime's mirror of a container's root
// (containerd's rootfs under /run or its state folder) is a view of the
// host's tree, not a place anything runs from.
func Aliases(p string) []Alias {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	infos, err := mountinfo.GetMountsFromReader(f, nil)
	if err != nil {
		return nil
	}
	return aliasesFrom(infos, p)
}

// region is what a folder shows of one filesystem: a device and a path
// within it; held marks content of a mount point below the folder.
type region struct {
	major, minor int
	path         string
	held         bool
}

func aliasesFrom(infos []*mountinfo.Info, p string) []Alias {
	p = filepath.Clean(p)
	var regions []region
	// The mount that serves p: the deepest mount point at or above it,
	// the last one mounted there.
	var serving *mountinfo.Info
	for _, m := range infos {
		if within(p, m.Mountpoint) && (serving == nil || len(m.Mountpoint) >= len(serving.Mountpoint)) {
			serving = m
		}
	}
	if serving == nil {
		return nil
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(p, serving.Mountpoint), "/")
	regions = append(regions, region{serving.Major, serving.Minor, filepath.Join(serving.Root, rel), false})
	for _, m := range infos {
		if m.Mountpoint != p && within(m.Mountpoint, p) {
			regions = append(regions, region{m.Major, m.Minor, m.Root, true})
		}
	}
	seen := map[Alias]bool{}
	var out []Alias
	add := func(a Alias) {
		if within(a.Path, p) || seen[a] {
			// p itself, or a mount point in p: what the folder shows at
			// its own path is judged with it.
			return
		}
		seen[a] = true
		out = append(out, a)
	}
	// A mount of the whole root filesystem elsewhere (a container's
	// rootfs its runtime binds from the host's /, as containerd does under
	// its state folder) shows each folder in the same role it has at /:
	// no alias of its own.
	var root *mountinfo.Info
	for _, m := range infos {
		if m.Mountpoint == "/" {
			root = m
		}
	}
	mirror := func(m *mountinfo.Info) bool {
		return root != nil && m != root && m.Root == "/" && m.Major == root.Major && m.Minor == root.Minor && m.Root == root.Root
	}
	for _, r := range regions {
		for _, m := range infos {
			if m.Major != r.major || m.Minor != r.minor || runtimeView(m.Mountpoint) || mirror(m) {
				continue
			}
			switch {
			case within(r.path, m.Root):
				rest := strings.TrimPrefix(strings.TrimPrefix(r.path, m.Root), "/")
				add(Alias{Path: filepath.Join(m.Mountpoint, rest), Holds: r.held})
			case within(m.Root, r.path):
				add(Alias{Path: m.Mountpoint, Holds: true})
			}
		}
	}
	return out
}

// runtimeView says whether a mount point lies in the kernel's or the
// runtime's own trees (see Aliases).
func runtimeView(mp string) bool {
	for _, d := range []string{"/proc", "/sys", "/dev", "/run"} {
		if within(mp, d) {
			return true
		}
	}
	return false
}

// within says whether p is dir or lies below it (both clean).
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}
