package oci

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/profiles"
)

func base(ms ...mounts.Mount) Input {
	return Input{
		Plan:   &mounts.Plan{Vault: "/v", Inbox: "/v/90-inbox/s", Network: profiles.NetworkNone, Mounts: append([]mounts.Mount{{Kind: mounts.RootRO, Source: "/", Target: "/", Dir: true}}, ms...)},
		Rootfs: "/run/x/rootfs", Args: []string{"/init"}, UID: 0, GID: 0,
		UIDMap: []specs.LinuxIDMapping{{ContainerID: 0, HostID: 0, Size: 1}},
		GIDMap: []specs.LinuxIDMapping{{ContainerID: 0, HostID: 0, Size: 1}},
	}
}

func TestTranslateMounts(t *testing.T) {
	tests := []struct {
		name   string
		in     []mounts.Mount
		mounts []specs.Mount
		masked []string
		ro     []string
	}{
		{"root only", nil, nil, nil, nil},
		{"vault ro then inbox rw, in plan order",
			[]mounts.Mount{
				{Kind: mounts.BindRO, Source: "/v", Target: "/v", Dir: true},
				{Kind: mounts.Hidden, Target: "/v/90-inbox", Dir: true},
				{Kind: mounts.BindRW, Source: "/v/90-inbox/s", Target: "/v/90-inbox/s", Dir: true},
			},
			[]specs.Mount{
				{Destination: "/v", Type: "bind", Source: "/v", Options: []string{"rbind", "ro", "rro", "nosuid", "nodev"}},
				{Destination: "/v/90-inbox", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "noexec", "mode=755", "size=64k", "ro"}},
				{Destination: "/v/90-inbox/s", Type: "bind", Source: "/v/90-inbox/s", Options: []string{"rbind", "rw", "nosuid", "nodev"}},
			}, nil, nil},
		{"procfs knobs and masks go to the runtime's lists",
			[]mounts.Mount{
				{Kind: mounts.Proc, Target: "/proc", Dir: true},
				{Kind: mounts.ReadOnly, Source: "/proc/sys", Target: "/proc/sys", Dir: true},
				{Kind: mounts.Masked, Target: "/proc/kcore"},
				{Kind: mounts.Masked, Target: "/sys/firmware", Dir: true},
			},
			[]specs.Mount{
				{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev", "hidepid=invisible"}},
				{Destination: "/sys/firmware", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "noexec", "mode=000", "size=4k", "ro"}},
			}, []string{"/proc/kcore"}, []string{"/proc/sys"}},
		{"secrets and placeholders",
			[]mounts.Mount{
				{Kind: mounts.Masked, Target: "/h/.netrc"},
				{Kind: mounts.Protected, Source: "/w/.git/hooks", Target: "/w/.git/hooks", Dir: true},
				{Kind: mounts.Protected, Target: "/w/.mcp.json", Placeholder: true},
				{Kind: mounts.Pinned, Source: "/w/.git", Target: "/w/.git", Dir: true},
				{Kind: mounts.Tmpfs, Target: "/tmp", Dir: true, Size: 1 << 20},
			},
			[]specs.Mount{
				{Destination: "/h/.netrc", Type: "bind", Source: "/dev/null", Options: []string{"bind", "ro", "nosuid", "nodev", "noexec"}},
				// The pin before what it holds (pinnedFirst): the runtime's
				// bind from the host would cover the read-only hooks.
				{Destination: "/w/.git", Type: "bind", Source: "/w/.git", Options: []string{"rbind", "rw", "nosuid", "nodev"}},
				{Destination: "/w/.git/hooks", Type: "bind", Source: "/w/.git/hooks", Options: []string{"rbind", "ro", "rro", "nosuid", "nodev"}},
				{Destination: "/w/.mcp.json", Type: "bind", Source: "/dev/null", Options: []string{"bind", "ro", "nosuid", "nodev", "noexec"}},
				{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777", "size=1048576"}},
			}, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Translate(base(tc.in...))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.mounts, s.Mounts); d != "" {
				t.Errorf("mounts (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.masked, s.Linux.MaskedPaths); d != "" {
				t.Errorf("maskedPaths (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.ro, s.Linux.ReadonlyPaths); d != "" {
				t.Errorf("readonlyPaths (-want +got):\n%s", d)
			}
		})
	}
}

func TestTranslateProcess(t *testing.T) {
	in := base()
	in.InitCaps = []string{"CAP_SETUID"}
	in.Pids, in.Memory = 64, 1<<20
	in.Hostname = "fedmem"
	in.Plan.Network = profiles.NetworkHost
	s, err := Translate(in)
	if err != nil {
		t.Fatal(err)
	}
	caps := []string{"CAP_SETUID"}
	pids, mem := int64(64), int64(1<<20)
	want := &specs.Spec{
		Version:  specs.Version,
		Hostname: "fedmem",
		Root:     &specs.Root{Path: "/run/x/rootfs", Readonly: true},
		Process: &specs.Process{
			User: specs.User{AdditionalGids: []uint32{}}, Args: []string{"/init"}, Env: []string{}, Cwd: "/",
			NoNewPrivileges: true, Rlimits: []specs.POSIXRlimit{},
			Capabilities: &specs.LinuxCapabilities{Bounding: caps, Effective: caps, Permitted: caps, Inheritable: []string{}, Ambient: []string{}},
		},
		Linux: &specs.Linux{
			UIDMappings: in.UIDMap, GIDMappings: in.GIDMap,
			Namespaces:        []specs.LinuxNamespace{{Type: "user"}, {Type: "mount"}, {Type: "pid"}, {Type: "ipc"}, {Type: "uts"}, {Type: "cgroup"}},
			Resources:         &specs.LinuxResources{Pids: &specs.LinuxPids{Limit: &pids}, Memory: &specs.LinuxMemory{Limit: &mem, Swap: &mem}},
			RootfsPropagation: "rslave",
		},
	}
	if d := cmp.Diff(want, s); d != "" {
		t.Errorf("spec (-want +got):\n%s", d)
	}
	in.Plan.Network = profiles.NetworkNone
	s, _ = Translate(in)
	if n := s.Linux.Namespaces[len(s.Linux.Namespaces)-1]; n.Type != specs.NetworkNamespace {
		t.Errorf("network none: last namespace %q, want network", n.Type)
	}
}

func TestTranslateRefuses(t *testing.T) {
	for name, in := range map[string]Input{
		"unknown kind":   base(mounts.Mount{Kind: "weird", Target: "/x"}),
		"root elsewhere": base(mounts.Mount{Kind: mounts.RootRO, Target: "/x"}),
		"no mappings":    func() Input { i := base(); i.UIDMap = nil; return i }(),
		"no args":        func() Input { i := base(); i.Args = nil; return i }(),
	} {
		if _, err := Translate(in); !errors.Is(err, ErrTranslate) {
			t.Errorf("%s: err %v, want ErrTranslate", name, err)
		}
	}
}

func TestTranslatePlaceholders(t *testing.T) {
	in := base(
		mounts.Mount{Kind: mounts.Protected, Target: "/w/.envrc", Placeholder: true},
		mounts.Mount{Kind: mounts.Protected, Target: "/w/.mcp.json", Placeholder: true},
		mounts.Mount{Kind: mounts.Protected, Target: "/w/.vscode", Placeholder: true, Dir: true},
	)
	in.Placeholder, in.PlaceholderJSON = "/b/empty", "/b/empty.json"
	s, err := Translate(in)
	if err != nil {
		t.Fatal(err)
	}
	opts := []string{"bind", "ro", "nosuid", "nodev", "noexec"}
	want := []specs.Mount{
		{Destination: "/w/.envrc", Type: "bind", Source: "/b/empty", Options: opts},
		{Destination: "/w/.mcp.json", Type: "bind", Source: "/b/empty.json", Options: opts},
		{Destination: "/w/.vscode", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "noexec", "mode=555", "size=4k", "nr_inodes=1", "ro"}},
	}
	if d := cmp.Diff(want, s.Mounts); d != "" {
		t.Errorf("mounts (-want +got):\n%s", d)
	}
}

func TestTranslateIDMapped(t *testing.T) {
	in := base(
		mounts.Mount{Kind: mounts.BindRW, Source: "/w", Target: "/w", Dir: true},
		mounts.Mount{Kind: mounts.Protected, Target: "/w/.envrc", Placeholder: true},
		mounts.Mount{Kind: mounts.BindRO, Source: "/v", Target: "/v", Dir: true},
	)
	m := IDMap{UID: []specs.LinuxIDMapping{{ContainerID: 0, HostID: 65533, Size: 1}}, GID: []specs.LinuxIDMapping{{ContainerID: 0, HostID: 65533, Size: 1}}}
	in.IDMapped = map[string]IDMap{"/w": m, "/w/.envrc": m, "/v": m}
	s, err := Translate(in)
	if err != nil {
		t.Fatal(err)
	}
	want := []specs.Mount{
		{Destination: "/w", Type: "bind", Source: "/w", Options: []string{"rbind", "rw", "nosuid", "nodev", "idmap"}, UIDMappings: m.UID, GIDMappings: m.GID},
		// a placeholder and a read-only vault are never idmapped
		{Destination: "/w/.envrc", Type: "bind", Source: "/dev/null", Options: []string{"bind", "ro", "nosuid", "nodev", "noexec"}},
		{Destination: "/v", Type: "bind", Source: "/v", Options: []string{"rbind", "ro", "rro", "nosuid", "nodev"}},
	}
	if d := cmp.Diff(want, s.Mounts); d != "" {
		t.Errorf("mounts (-want +got):\n%s", d)
	}
}

// TestTranslateHomeIDMap: a root caller's closed home goes first, read-only
// and idmapped, so every plan mount (a secret's mask, a writable state
// path) lands over it; without the plan's home it is refused.
func TestTranslateHomeIDMap(t *testing.T) {
	in := base(
		mounts.Mount{Kind: mounts.BindRW, Source: "/root/.claude", Target: "/root/.claude", Dir: true},
		mounts.Mount{Kind: mounts.Masked, Target: "/root/.ssh", Dir: true},
	)
	in.Plan.Home = "/root"
	m := IDMap{UID: []specs.LinuxIDMapping{{ContainerID: 0, HostID: 64001, Size: 1}}, GID: []specs.LinuxIDMapping{{ContainerID: 0, HostID: 64001, Size: 1}}}
	in.HomeIDMap = &m
	s, err := Translate(in)
	if err != nil {
		t.Fatal(err)
	}
	want := []specs.Mount{
		{Destination: "/root", Type: "bind", Source: "/root", Options: []string{"rbind", "ro", "rro", "nosuid", "nodev", "idmap"}, UIDMappings: m.UID, GIDMappings: m.GID},
		{Destination: "/root/.claude", Type: "bind", Source: "/root/.claude", Options: []string{"rbind", "rw", "nosuid", "nodev"}},
		{Destination: "/root/.ssh", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "noexec", "mode=000", "size=4k", "ro"}},
	}
	if d := cmp.Diff(want, s.Mounts); d != "" {
		t.Errorf("mounts (-want +got):\n%s", d)
	}
	for _, h := range []string{"", "/", "relative"} {
		in.Plan.Home = h
		if _, err := Translate(in); !errors.Is(err, ErrTranslate) {
			t.Errorf("home %q: err %v, want ErrTranslate", h, err)
		}
	}
}

// TestTranslateHostReadOnlyRoot: a writable bind whose source is on a
// mount read-only on the host (Plan.HostReadOnly names its target) is
// bound read-only, not "rw" (runc's remount would clear the flag of the
// top mount); submounts keep their own flags (no rro). Others stay rw.
func TestTranslateHostReadOnlyRoot(t *testing.T) {
	in := base(
		mounts.Mount{Kind: mounts.BindRW, Source: "/w", Target: "/w", Dir: true},
		mounts.Mount{Kind: mounts.BindRW, Source: "/x", Target: "/x", Dir: true},
	)
	in.Plan.HostReadOnly = []string{"/w", "/x/sub"}
	s, err := Translate(in)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, m := range s.Mounts {
		got[m.Destination] = m.Options
	}
	if d := cmp.Diff([]string{"rbind", "ro", "nosuid", "nodev"}, got["/w"]); d != "" {
		t.Errorf("/w (read-only on the host): %s", d)
	}
	if d := cmp.Diff(rwBind, got["/x"]); d != "" {
		t.Errorf("/x (writable on the host, a read-only submount): %s", d)
	}
}

// A Pinned folder is bound before what the plan mounts below it: a
// runtime binds it from the host path, which would cover a state folder
// bound below it before (a state at ~/go/pkg/mod under a pinned ~/go).
func TestPinnedFirst(t *testing.T) {
	ms := []mounts.Mount{
		{Kind: mounts.BindRW, Source: "/h", Target: "/h"},
		{Kind: mounts.BindRW, Source: "/h/go", Target: "/h/go"},
		{Kind: mounts.BindRW, Source: "/h/.local/share/fedmem/p/go/pkg/mod", Target: "/h/go/pkg/mod"},
		{Kind: mounts.BindRW, Source: "/other", Target: "/other"},
		{Kind: mounts.Pinned, Source: "/h/go", Target: "/h/go"},
		{Kind: mounts.Pinned, Source: "/elsewhere", Target: "/elsewhere"},
	}
	var got []string
	for _, m := range pinnedFirst(ms) {
		got = append(got, string(m.Kind)+" "+m.Target)
	}
	want := []string{"rw /h", "rw /h/go", "pinned /h/go", "rw /h/go/pkg/mod", "rw /other", "pinned /elsewhere"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("pinnedFirst = %q, want %q", got, want)
	}
	if ms[4].Kind != mounts.Pinned {
		t.Error("pinnedFirst changed its input")
	}
}
