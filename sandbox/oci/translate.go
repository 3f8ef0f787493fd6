package oci

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/vault"
)

// ErrTranslate marks a Plan or Input the OCI spec cannot express.
var ErrTranslate = errors.New("oci: cannot translate")

// Input is everything Translate needs besides the Plan.
type Input struct {
	Plan *mounts.Plan
	// Rootfs is root.path: a directory that already holds the host's /
	// recursively read-only (made by the runtime helper), or an image's
	// unpacked root (containerd). Relative paths are the bundle's.
	Rootfs string
	// Image is true when Rootfs is an image: the Plan's host paths that do
	// not exist in it are created by the runtime as mount points.
	Image bool
	// Args, Env and Cwd are the container process's: fedmem's init (the
	// agent's own come to it over its config fd).
	Args []string
	Env  []string
	Cwd  string
	// Terminal asks the runtime for a console; fedmem's init makes its own
	// private pty instead, so backends leave it false.
	Terminal bool
	Hostname string
	// UID and GID the init runs as inside; UIDMap and GIDMap map them to the
	// host (a user namespace is always created).
	UID, GID       uint32
	UIDMap, GIDMap []specs.LinuxIDMapping
	// InitCaps are the capabilities the init holds (bounding, effective,
	// permitted) until it drops every one before forking the agent.
	InitCaps []string
	Rlimits  []specs.POSIXRlimit
	// Pids and Memory are cgroup limits (0: none); CgroupsPath places the
	// container's cgroup.
	Pids   int64
	Memory int64
	// CPU is cores of CPU time (quota over a 100ms period); 0: none.
	CPU         float64
	CgroupsPath string
	// Seccomp is applied by the runtime right before it execs the init
	// (seccomp.OCI); nil leaves it to the init alone.
	Seccomp *specs.LinuxSeccomp
	// Annotations are copied as they are.
	Annotations map[string]string
	// Placeholder and PlaceholderJSON are host paths of an empty and a
	// "{}" read-only file: what an absent protected file reads as (as in
	// the namespace backend; a program that reads its optional config
	// sees none). "": the null device, unusable (nodev).
	Placeholder, PlaceholderJSON string
	// IDMapped are writable binds (by target) mounted idmapped: what the
	// agent creates there stays its owner's on disk (the namespace
	// backend's idmapBinds, as OCI idmapped mounts).
	IDMapped map[string]IDMap
	// HomeIDMap, when set, attaches the Plan's home read-only and
	// idmapped right over the root, under every plan mount: a root
	// caller's 0700 home that the agent (another uid) could not even
	// traverse to reach its profile's paths (the namespace backend's
	// idmapped home).
	HomeIDMap *IDMap
}

// IDMap is one idmapped mount's mappings, as the kernel's user namespace
// maps of the mount (on-disk id → id seen through the mount).
type IDMap struct {
	UID, GID []specs.LinuxIDMapping
}

// Translate builds the OCI runtime spec for in.
func Translate(in Input) (*specs.Spec, error) {
	pl := in.Plan
	if pl == nil || len(pl.Mounts) == 0 {
		return nil, fmt.Errorf("%w: empty plan", ErrTranslate)
	}
	if in.Rootfs == "" || len(in.Args) == 0 {
		return nil, fmt.Errorf("%w: rootfs and args are required", ErrTranslate)
	}
	if len(in.UIDMap) == 0 || len(in.GIDMap) == 0 {
		return nil, fmt.Errorf("%w: a user namespace needs uid and gid mappings", ErrTranslate)
	}
	caps := append([]string{}, in.InitCaps...)
	s := &specs.Spec{
		Version:  specs.Version,
		Hostname: in.Hostname,
		Root:     &specs.Root{Path: in.Rootfs, Readonly: true},
		Process: &specs.Process{
			Terminal:        in.Terminal,
			User:            specs.User{UID: in.UID, GID: in.GID, AdditionalGids: []uint32{}},
			Args:            append([]string{}, in.Args...),
			Env:             append([]string{}, in.Env...),
			Cwd:             in.Cwd,
			NoNewPrivileges: true,
			Rlimits:         append([]specs.POSIXRlimit{}, in.Rlimits...),
			Capabilities: &specs.LinuxCapabilities{
				Bounding: caps, Effective: caps, Permitted: caps,
				Inheritable: []string{}, Ambient: []string{},
			},
		},
		Annotations: in.Annotations,
		Linux: &specs.Linux{
			UIDMappings: append([]specs.LinuxIDMapping{}, in.UIDMap...),
			GIDMappings: append([]specs.LinuxIDMapping{}, in.GIDMap...),
			Seccomp:     in.Seccomp,
			CgroupsPath: in.CgroupsPath,
			Namespaces: []specs.LinuxNamespace{
				{Type: specs.UserNamespace}, {Type: specs.MountNamespace}, {Type: specs.PIDNamespace},
				{Type: specs.IPCNamespace}, {Type: specs.UTSNamespace}, {Type: specs.CgroupNamespace},
			},
			// Nothing the container mounts propagates back to the host.
			RootfsPropagation: "rslave",
		},
	}
	if in.Cwd == "" {
		s.Process.Cwd = "/"
	}
	if pl.Network.OwnNetNS() { // loopback only; allowlist and public reach out through fedmem-run's proxy
		s.Linux.Namespaces = append(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.NetworkNamespace})
	}
	if in.Pids > 0 || in.Memory > 0 || in.CPU > 0 {
		s.Linux.Resources = &specs.LinuxResources{}
		if in.CPU > 0 {
			period := uint64(100000)
			quota := int64(in.CPU*float64(period) + 0.5)
			s.Linux.Resources.CPU = &specs.LinuxCPU{Quota: &quota, Period: &period}
		}
		if in.Pids > 0 {
			s.Linux.Resources.Pids = &specs.LinuxPids{Limit: &in.Pids}
		}
		if in.Memory > 0 {
			m, swap := in.Memory, in.Memory // no swap beyond the limit
			s.Linux.Resources.Memory = &specs.LinuxMemory{Limit: &m, Swap: &swap}
		}
	}
	if in.HomeIDMap != nil {
		if pl.Home == "" || pl.Home == "/" || !strings.HasPrefix(pl.Home, "/") {
			return nil, fmt.Errorf("%w: an idmapped home needs the plan's home, an absolute path other than /, not %q", ErrTranslate, pl.Home)
		}
		s.Mounts = append(s.Mounts, specs.Mount{Destination: pl.Home, Type: "bind", Source: pl.Home,
			Options: append(append([]string{}, roBind...), "idmap"), UIDMappings: in.HomeIDMap.UID, GIDMappings: in.HomeIDMap.GID})
	}
	for _, m := range pinnedFirst(pl.Mounts) {
		if err := addMount(s, m, in); err != nil {
			return nil, err
		}
		if idm, ok := in.IDMapped[m.Target]; ok && (m.Kind == mounts.BindRW || m.Kind == mounts.Pinned || (m.Kind == mounts.Protected && !m.Placeholder) || (m.Kind == mounts.BindRO && m.Idmap)) {
			mt := &s.Mounts[len(s.Mounts)-1]
			mt.UIDMappings, mt.GIDMappings = idm.UID, idm.GID
			mt.Options = append(mt.Options, "idmap")
		}
	}
	// The gate's view trees, read-only, where the init takes each as its
	// view's lower layer (sandbox/pid1: it detaches them before the agent
	// runs); last, so the sandbox's /tmp holds their mount points.
	for i, m := range pl.Viewed() {
		if m.ViewTree != "" {
			s.Mounts = append(s.Mounts, specs.Mount{Destination: mounts.ViewTreeStage(i), Type: "bind", Source: m.ViewTree, Options: append(append([]string{}, roBind...), "noexec")})
		}
	}
	return s, nil
}

// pinnedFirst moves each Pinned mount before the first mount below its
// target that follows its last ancestor. The namespace backend realises a
// Pinned folder as a recursive bind of the staged root onto itself, binds
// beneath it kept; a runtime binds it from the host path, which would
// cover what was mounted below it already (a state folder at
// ~/go/pkg/mod under a pinned ~/go: the agent's module cache landed in
// the home's own folder, and pin.CheckMounted refused the session).
func pinnedFirst(ms []mounts.Mount) []mounts.Mount {
	out := append([]mounts.Mount{}, ms...)
	for i := 0; i < len(out); i++ {
		p := out[i]
		if p.Kind != mounts.Pinned {
			continue
		}
		last := -1
		for j := 0; j < i; j++ {
			if vault.Within(p.Target, out[j].Target) {
				last = j // an ancestor or the folder itself: P goes after it
			}
		}
		for j := last + 1; j < i; j++ {
			if out[j].Target != p.Target && vault.Within(out[j].Target, p.Target) {
				copy(out[j+1:i+1], out[j:i])
				out[j] = p
				break
			}
		}
	}
	return out
}

// Mount options shared by kinds.
var (
	roBind = []string{"rbind", "ro", "rro", "nosuid", "nodev"}
	rwBind = []string{"rbind", "rw", "nosuid", "nodev"}
)

// underProc: runc refuses mount targets below /proc (CVE-2019-19921 and
// friends); those masks and read-only knobs go to maskedPaths and
// readonlyPaths, which it applies inside the container's own procfs.
func underProc(p string) bool { return strings.HasPrefix(p, "/proc/") }

func addMount(s *specs.Spec, m mounts.Mount, in Input) error {
	add := func(mt specs.Mount) { s.Mounts = append(s.Mounts, mt) }
	switch m.Kind {
	case mounts.RootRO:
		if m.Target != "/" {
			return fmt.Errorf("%w: %s mount at %s", ErrTranslate, m.Kind, m.Target)
		}
		// root.path, read-only (Translate).
	case mounts.Dev:
		add(specs.Mount{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k", "ro"}})
		add(specs.Mount{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}})
		add(specs.Mount{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: sized([]string{"nosuid", "nodev", "mode=1777"}, m.Size)})
		add(specs.Mount{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}})
	case mounts.Proc:
		// hidepid=invisible: fedmem's own init is not dumpable, so the
		// agent does not even see it (guarantee 5), as in the namespace
		// backend.
		add(specs.Mount{Destination: m.Target, Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev", "hidepid=invisible"}})
	case mounts.Tmpfs:
		add(specs.Mount{Destination: m.Target, Type: "tmpfs", Source: "tmpfs", Options: sized([]string{"nosuid", "nodev", "mode=1777"}, m.Size)})
	case mounts.Hidden:
		// Mounted writable, filled with the later mounts' mount points and
		// made read-only at the end (runc's finalizeRootfs).
		add(specs.Mount{Destination: m.Target, Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "noexec", "mode=755", "size=64k", "ro"}})
	case mounts.ReadOnly:
		if underProc(m.Target) {
			s.Linux.ReadonlyPaths = append(s.Linux.ReadonlyPaths, m.Target)
			break
		}
		add(specs.Mount{Destination: m.Target, Type: "bind", Source: m.Source, Options: append(append([]string{}, roBind...), "noexec")})
	case mounts.BindRO, mounts.Protected:
		if m.Placeholder {
			src := in.Placeholder
			if strings.HasSuffix(m.Target, ".json") {
				src = in.PlaceholderJSON
			}
			if m.Dir {
				// Empty and readable (a tool lists it and finds nothing),
				// as the namespace backend's: unlike a secret's mask.
				add(specs.Mount{Destination: m.Target, Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "noexec", "mode=555", "size=4k", "nr_inodes=1", "ro"}})
				break
			}
			if src == "" {
				addMask(s, m)
				break
			}
			add(specs.Mount{Destination: m.Target, Type: "bind", Source: src, Options: []string{"bind", "ro", "nosuid", "nodev", "noexec"}})
			break
		}
		add(specs.Mount{Destination: m.Target, Type: "bind", Source: m.Source, Options: append([]string{}, roBind...)})
	case mounts.BindRW, mounts.Pinned:
		opts := rwBind
		if m.Kind == mounts.BindRW && slices.Contains(in.Plan.HostReadOnly, m.Target) {
			// Read-only on the host: runc's "rw" would clear the flag of
			// the top mount (its remount); keep it, as the namespace
			// backend does (mounts.Verify, rule host-readonly).
			// Not rro: what is writable on the host below it stays so.
			opts = []string{"rbind", "ro", "nosuid", "nodev"}
		}
		add(specs.Mount{Destination: m.Target, Type: "bind", Source: m.Source, Options: append([]string{}, opts...)})
	case mounts.Masked:
		if underProc(m.Target) {
			s.Linux.MaskedPaths = append(s.Linux.MaskedPaths, m.Target)
			break
		}
		addMask(s, m)
	default:
		return fmt.Errorf("%w: unknown mount kind %q at %s", ErrTranslate, m.Kind, m.Target)
	}
	return nil
}

// addMask hides a path: an empty read-only tmpfs over a directory, the
// null device read-only and unusable (nodev: open fails with EACCES) over a
// file.
func addMask(s *specs.Spec, m mounts.Mount) {
	if m.Dir {
		s.Mounts = append(s.Mounts, specs.Mount{Destination: m.Target, Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "noexec", "mode=000", "size=4k", "ro"}})
		return
	}
	s.Mounts = append(s.Mounts, specs.Mount{Destination: m.Target, Type: "bind", Source: "/dev/null", Options: []string{"bind", "ro", "nosuid", "nodev", "noexec"}})
}

func sized(opts []string, size int64) []string {
	if size > 0 {
		return append(opts, "size="+strconv.FormatInt(size, 10))
	}
	return opts
}
