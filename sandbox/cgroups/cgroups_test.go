package cgroups

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tree writes a fake cgroup filesystem: name → content, directories made
// as needed.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// kernelMkdir grows a new v2 cgroup's interface files as cgroupfs does:
// cgroup.controllers is what the parent's subtree_control enabled, and
// each enabled controller's files appear.
func kernelMkdir(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(dir), "cgroup.subtree_control"))
	if err != nil { // a v1 hierarchy
		return os.WriteFile(filepath.Join(dir, "cgroup.procs"), nil, 0o644)
	}
	var on []string
	for _, w := range strings.Fields(string(b)) {
		if c, ok := strings.CutPrefix(w, "+"); ok {
			on = append(on, c)
		} else {
			on = append(on, w)
		}
	}
	files := map[string]string{"cgroup.controllers": strings.Join(on, " "), "cgroup.subtree_control": "", "cgroup.procs": ""}
	for _, c := range on {
		switch c {
		case "memory":
			files["memory.max"], files["memory.swap.max"], files["memory.events"] = "max", "max", "oom 0\noom_kill 0\n"
		case "pids":
			files["pids.max"], files["pids.events"] = "max", "max 0\n"
		case "cpu":
			files["cpu.max"], files["cpu.weight"] = "max 100000", "100"
		}
	}
	for n, v := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(v), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var unified = map[string]string{
	"cgroup.controllers":     "cpuset cpu io memory hugetlb pids rdma misc",
	"cgroup.subtree_control": "",
	"cgroup.procs":           "1\n",
}

// hybrid is this project's build host: v2 mounted at unified/ with no
// controllers, memory and pids (and cpu) on v1.
var hybrid = map[string]string{
	"unified/cgroup.controllers":     "",
	"unified/cgroup.subtree_control": "",
	"unified/cgroup.procs":           "1\n",
	"memory/cgroup.procs":            "1\n",
	"pids/cgroup.procs":              "1\n",
	"cpu,cpuacct/cgroup.procs":       "1\n",
}

func TestProbe(t *testing.T) {
	noBus := func(string) string { return "" }
	cases := []struct {
		name    string
		files   map[string]string
		euid    int
		env     func(string) string
		version string
		want    map[string]string // controller → "hierarchy enforce"
		why     string            // in every refusal
	}{
		{"unified root", unified, 0, noBus, "v2", map[string]string{"memory": "v2 true", "pids": "v2 true", "cpu": "v2 true"}, ""},
		{"unified user without systemd", unified, 1000, noBus, "v2", map[string]string{"memory": "v2 false", "pids": "v2 false", "cpu": "v2 false"}, "XDG_RUNTIME_DIR is not set"},
		{"hybrid root", hybrid, 0, noBus, "hybrid", map[string]string{"memory": "v1 true", "pids": "v1 true", "cpu": "v1 true"}, ""},
		{"no cpu anywhere", map[string]string{"cgroup.controllers": "memory pids", "cgroup.subtree_control": ""}, 0, noBus, "v2", map[string]string{"memory": "v2 true", "pids": "v2 true", "cpu": "none false"}, "no cgroup hierarchy has the cpu controller"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := Host{Root: tree(t, c.files), Euid: c.euid, Getenv: c.env}
			if v := h.Version(); v != c.version {
				t.Errorf("version %s, want %s", v, c.version)
			}
			for _, s := range h.Probe() {
				got := s.Hierarchy + " " + map[bool]string{true: "true", false: "false"}[s.Enforce]
				if got != c.want[s.Controller] {
					t.Errorf("%s: %s, want %s (%+v)", s.Controller, got, c.want[s.Controller], s)
				}
				if !s.Enforce && !strings.Contains(s.Why, c.why) {
					t.Errorf("%s: why %q lacks %q", s.Controller, s.Why, c.why)
				}
				if s.Enforce == (s.Via == "") {
					t.Errorf("%s: enforce %v with via %q", s.Controller, s.Enforce, s.Via)
				}
			}
		})
	}
}

func TestProbeUserScope(t *testing.T) {
	files := map[string]string{
		"user.slice/user-1000.slice/user@1000.service/cgroup.controllers": "memory pids",
		"run/bus": "",
	}
	for k, v := range unified {
		files[k] = v
	}
	root := tree(t, files)
	h := Host{Root: root, Euid: 1000,
		Getenv:   func(k string) string { return map[string]string{"XDG_RUNTIME_DIR": filepath.Join(root, "run")}[k] },
		LookPath: func(string) (string, error) { return "/usr/bin/systemd-run", nil }}
	for _, s := range h.Probe() {
		switch s.Controller {
		case "memory", "pids":
			if !s.Enforce || !strings.Contains(s.Via, "systemd user scope") {
				t.Errorf("%+v", s)
			}
		case "cpu":
			if s.Enforce || !strings.Contains(s.Why, "does not delegate cpu") {
				t.Errorf("%+v", s)
			}
		}
	}
	h.LookPath = func(string) (string, error) { return "", errors.New("not found") }
	for _, s := range h.Probe() {
		if s.Enforce || !strings.Contains(s.Why, "busctl (systemd) not found") {
			t.Errorf("%+v", s)
		}
	}
}

func TestNewV2Root(t *testing.T) {
	root := tree(t, unified)
	h := Host{Root: root, Euid: 0, mkdirHook: kernelMkdir}
	s, err := h.New("abc", Limits{Memory: 64 << 20, Pids: 32, CPU: 1.5})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(root, "cgroup.subtree_control")); got != "+memory\n+pids\n+cpu\n" {
		t.Errorf("root subtree_control %q", got)
	}
	slice := filepath.Join(root, "fedmem.slice")
	if got := read(t, filepath.Join(slice, "cgroup.subtree_control")); got != "+memory\n+pids\n+cpu\n" {
		t.Errorf("fedmem.slice subtree_control %q", got)
	}
	dir := filepath.Join(slice, "fedmem-abc")
	for f, want := range map[string]string{"memory.max": "67108864", "memory.swap.max": "0", "pids.max": "32", "cpu.max": "150000 100000"} {
		if got := read(t, filepath.Join(dir, f)); got != want {
			t.Errorf("%s = %q, want %q", f, got, want)
		}
	}
	if s.FD() == nil || s.FD().Name() != dir {
		t.Errorf("FD %v, want %s open", s.FD(), dir)
	}
	if s.NeedsAdd() {
		t.Error("v2 only: nothing to add after start")
	}
	if len(s.Notes()) != 4 || !strings.Contains(strings.Join(s.Notes(), ";"), "cgroup v2 memory.max") || !strings.Contains(strings.Join(s.Notes(), ";"), "cpu: sessions share fedmem.slice's weight") {
		t.Errorf("notes %q", s.Notes())
	}
	if h := s.Hits(); len(h) != 0 {
		t.Errorf("hits %v before any", h)
	}
	os.WriteFile(filepath.Join(dir, "pids.events"), []byte("max 7\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "memory.events"), []byte("low 0\nhigh 0\nmax 12\noom 1\noom_kill 1\n"), 0o644)
	if h := s.Hits(); !slices.Equal(h, []string{"pids", "memory"}) {
		t.Errorf("hits %v", h)
	}
	s.Remove()
	if s.FD() != nil {
		t.Error("fd kept after Remove")
	}
}

// An existing fedmem.slice whose controllers are already on is reused;
// a second session gets its own directory.
func TestNewV2Reuse(t *testing.T) {
	root := tree(t, unified)
	h := Host{Root: root, Euid: 0, mkdirHook: kernelMkdir}
	a, err := h.New("a", Limits{Pids: 8})
	if err != nil {
		t.Fatal(err)
	}
	b, err := h.New("b", Limits{Pids: 9})
	if err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(root, "fedmem.slice", "cgroup.subtree_control")); got != "+pids\n" {
		t.Errorf("subtree_control %q: pids enabled twice or not at all", got)
	}
	if read(t, filepath.Join(root, "fedmem.slice", "fedmem-b", "pids.max")) != "9" {
		t.Error("second session's pids.max")
	}
	a.Remove()
	b.Remove()
}

// A controller the parent does not offer is named in the error, so the
// caller refuses (or drops) that limit alone.
func TestNewV2ControllerMissing(t *testing.T) {
	files := map[string]string{}
	for k, v := range unified {
		files[k] = v
	}
	files["fedmem.slice/cgroup.controllers"] = "memory pids" // cpu not delegated
	files["fedmem.slice/cgroup.subtree_control"] = ""
	h := Host{Root: tree(t, files), Euid: 0, mkdirHook: kernelMkdir}
	_, err := h.New("m", Limits{Memory: 1 << 20, Pids: 8, CPU: 1})
	var ce *ControllerError
	if !errors.As(err, &ce) || ce.Controller != "cpu" || !strings.Contains(err.Error(), "not available") {
		t.Fatalf("err %v, want the cpu controller named", err)
	}
	s, err := h.New("m", Limits{Memory: 1 << 20, Pids: 8})
	if err != nil {
		t.Fatal(err)
	}
	s.Remove()
}

func TestNewV1Hybrid(t *testing.T) {
	root := tree(t, hybrid)
	h := Host{Root: root, Euid: 0, mkdirHook: kernelMkdir}
	s, err := h.New("x", Limits{Memory: 1 << 20, Pids: 16, CPU: 0.25})
	if err != nil {
		t.Fatal(err)
	}
	if s.FD() != nil || !s.NeedsAdd() {
		t.Error("hybrid host: v1 cgroups joined after start, no v2 fd")
	}
	for f, want := range map[string]string{"memory/fedmem-x/memory.limit_in_bytes": "1048576", "pids/fedmem-x/pids.max": "16", "cpu,cpuacct/fedmem.slice/fedmem-x/cpu.cfs_quota_us": "25000", "cpu,cpuacct/fedmem.slice/fedmem-x/cpu.cfs_period_us": "100000", "cpu,cpuacct/fedmem.slice/fedmem-x/cpu.shares": "1024"} {
		if got := read(t, filepath.Join(root, f)); got != want {
			t.Errorf("%s = %q, want %q", f, got, want)
		}
	}
	if err := s.Add(4242); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(root, "pids/fedmem-x/cgroup.procs")); got != "4242" {
		t.Errorf("cgroup.procs %q", got)
	}
	os.WriteFile(filepath.Join(root, "memory/fedmem-x/memory.oom_control"), []byte("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"), 0o644)
	if h := s.Hits(); !slices.Equal(h, []string{"memory"}) {
		t.Errorf("hits %v", h)
	}
}

// Share alone (no cpu limit): every session gets a cpu cgroup of its own
// under the one fedmem.slice, at the default weight and with no quota.
func TestShareV1(t *testing.T) {
	root := tree(t, hybrid)
	h := Host{Root: root, Euid: 0, mkdirHook: kernelMkdir}
	var ss []*Session
	for _, id := range []string{"a", "b"} {
		s, err := h.New(id, Limits{Share: true})
		if err != nil {
			t.Fatal(err)
		}
		ss = append(ss, s)
		dir := filepath.Join(root, "cpu,cpuacct", "fedmem.slice", "fedmem-"+id)
		if got := read(t, filepath.Join(dir, "cpu.shares")); got != "1024" {
			t.Errorf("%s cpu.shares %q, want 1024", id, got)
		}
		if _, err := os.Stat(filepath.Join(dir, "cpu.cfs_quota_us")); err == nil {
			t.Errorf("%s: a quota written without limits.cpu", id)
		}
		if !s.NeedsAdd() || len(s.Notes()) != 1 || !strings.Contains(s.Notes()[0], "cpu: sessions share fedmem.slice's weight (cgroup v1 "+dir) {
			t.Errorf("%s: notes %q", id, s.Notes())
		}
		if err := s.Add(4242); err != nil {
			t.Fatal(err)
		}
		if got := read(t, filepath.Join(dir, "cgroup.procs")); got != "4242" {
			t.Errorf("cgroup.procs %q", got)
		}
	}
	for _, s := range ss {
		s.Remove() // (rmdir: a real cgroup's removal is in test/escape TestCPUSessionCgroup)
	}
	if !strings.Contains(h.CPUShare(), "cpu: sessions share fedmem.slice's weight (cgroup v1 "+filepath.Join(root, "cpu,cpuacct", "fedmem.slice")) {
		t.Errorf("CPUShare %q", h.CPUShare())
	}
}

func TestShareV2(t *testing.T) {
	root := tree(t, unified)
	h := Host{Root: root, Euid: 0, mkdirHook: kernelMkdir}
	s, err := h.New("w", Limits{Share: true})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "fedmem.slice", "fedmem-w")
	if got := read(t, filepath.Join(dir, "cpu.weight")); got != "100" {
		t.Errorf("cpu.weight %q", got)
	}
	if got := read(t, filepath.Join(dir, "cpu.max")); got != "max 100000" {
		t.Errorf("cpu.max %q: a quota without limits.cpu", got)
	}
	if s.FD() == nil || len(s.Notes()) != 1 || !strings.Contains(s.Notes()[0], "sessions share fedmem.slice's weight (cgroup v2") {
		t.Errorf("fd %v notes %q", s.FD(), s.Notes())
	}
	s.Remove()
	// No cpu controller anywhere: CPUShare says it is not pooled, and why.
	h = Host{Root: t.TempDir(), Euid: 0}
	if got := h.CPUShare(); !strings.Contains(got, "NOT pooled") || !strings.Contains(got, "no cgroup hierarchy has the cpu controller") {
		t.Errorf("CPUShare %q", got)
	}
}

func TestNewErrors(t *testing.T) {
	// v2 root whose subtree_control refuses writes (a real cgroup with
	// processes answers EBUSY; a read-only file stands in for a refusal).
	root := tree(t, unified)
	os.Chmod(filepath.Join(root, "cgroup.subtree_control"), 0o444)
	h := Host{Root: root, Euid: 0, mkdirHook: kernelMkdir}
	if os.Geteuid() != 0 { // root writes through 0444
		_, err := h.New("e", Limits{Memory: 1 << 20})
		var ce *ControllerError
		if !errors.As(err, &ce) || ce.Controller != "memory" || !strings.Contains(err.Error(), "cgroup.subtree_control") {
			t.Errorf("err %v", err)
		}
	}
	// No cgroup at all.
	h = Host{Root: t.TempDir(), Euid: 0}
	_, err := h.New("e", Limits{Pids: 4})
	var ce *ControllerError
	if !errors.As(err, &ce) || ce.Controller != "pids" || !strings.Contains(err.Error(), "no cgroup v1 pids hierarchy and no cgroup v2 pids controller") {
		t.Errorf("err %v", err)
	}
	// An unprivileged caller on v2 without systemd: refused with the reason.
	h = Host{Root: tree(t, unified), Euid: 1000, Getenv: func(string) string { return "" }}
	_, err = h.New("e", Limits{Pids: 4})
	if err == nil || !strings.Contains(err.Error(), "delegated systemd user scope") || !strings.Contains(err.Error(), "XDG_RUNTIME_DIR") {
		t.Errorf("err %v", err)
	}
	// Nothing to limit: no cgroup.
	if s, err := h.New("e", Limits{}); s != nil || err != nil {
		t.Errorf("%v %v", s, err)
	}
}

func TestOwnV2(t *testing.T) {
	h := Host{Self: "9:name=systemd:/\n4:memory:/x\n0::/user.slice/a.scope\n"}
	if h.OwnV2() != "/user.slice/a.scope" {
		t.Error(h.OwnV2())
	}
}
