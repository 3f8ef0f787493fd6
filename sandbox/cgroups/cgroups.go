package cgroups

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Controllers are the cgroup controllers fedmem's limits use.
var Controllers = []string{"memory", "pids", "cpu"}

// CPUPeriod is the period (µs) of the cpu bandwidth limit: cpu.max (v2)
// and cpu.cfs_period_us (v1).
const CPUPeriod = 100000

// Host is where the cgroup filesystems are and who asks.
type Host struct {
	// Root is the cgroup filesystem root, normally /sys/fs/cgroup.
	Root string
	// Self is the text of /proc/self/cgroup.
	Self string
	// Euid is the caller's effective uid: 0 creates sub-cgroups itself,
	// anyone else needs a delegated systemd user scope on v2.
	Euid int
	// Getenv and LookPath find the systemd user manager
	// ($XDG_RUNTIME_DIR/bus) and systemd-run.
	Getenv   func(string) string
	LookPath func(string) (string, error)
	// mkdirHook stands in for mkdir(2) on cgroupfs in the unit tests,
	// where a directory of files must grow the kernel's interface files.
	mkdirHook func(string) error
	// layout, when set, remembers what V2Root, V1Dir and the v2 root's
	// controllers found (System's Hosts share one).
	layout *layout
}

// layout is what the cgroup filesystems offer — where v2 is mounted,
// each controller's v1 hierarchy, the v2 root's controllers — looked up
// once per process: a launch asked for it a dozen times (the limits'
// set-up, the report's cpu note, the teardown), each a stat or read of
// /sys/fs/cgroup, and neither the mounts nor the root's controllers
// change while fedmem-run runs (it makes cgroups below them only).
type layout struct {
	mu     sync.Mutex
	v2Root *string
	v1     map[string]string
	v2Ctls *[]string
}

// systemLayout is the layout of System's Hosts.
var systemLayout = &layout{v1: map[string]string{}}

func (h Host) mkdir(dir string) error {
	if h.mkdirHook != nil {
		return h.mkdirHook(dir)
	}
	return os.Mkdir(dir, 0o755)
}

// System is this machine's Host.
func System() Host {
	b, _ := os.ReadFile("/proc/self/cgroup")
	return Host{Root: "/sys/fs/cgroup", Self: string(b), Euid: os.Geteuid(), Getenv: os.Getenv, LookPath: exec.LookPath, layout: systemLayout}
}

// Status is what the probe says of one controller.
type Status struct {
	Controller string `json:"controller"`
	// Hierarchy is "v2", "v1" or "none".
	Hierarchy string `json:"hierarchy"`
	// Enforce: fedmem-run can enforce this controller's limit here.
	Enforce bool `json:"enforce"`
	// Via says how (Enforce) or Why not.
	Via string `json:"via,omitempty"`
	Why string `json:"why,omitempty"`
}

// V2Root is the cgroup v2 mount: Root on a unified host, Root/unified on
// a hybrid one, "" when there is none.
func (h Host) V2Root() string {
	if l := h.layout; l != nil {
		l.mu.Lock()
		v := l.v2Root
		l.mu.Unlock()
		if v == nil {
			r := h.v2RootNow()
			l.mu.Lock()
			l.v2Root, v = &r, &r
			l.mu.Unlock()
		}
		return *v
	}
	return h.v2RootNow()
}

func (h Host) v2RootNow() string {
	for _, d := range []string{h.Root, filepath.Join(h.Root, "unified")} {
		if isFile(filepath.Join(d, "cgroup.controllers")) {
			return d
		}
	}
	return ""
}

// V1Dir is the v1 hierarchy of ctrl ("" when there is none).
func (h Host) V1Dir(ctrl string) string {
	if l := h.layout; l != nil {
		l.mu.Lock()
		d, ok := l.v1[ctrl]
		l.mu.Unlock()
		if !ok {
			d = h.v1DirNow(ctrl)
			l.mu.Lock()
			l.v1[ctrl] = d
			l.mu.Unlock()
		}
		return d
	}
	return h.v1DirNow(ctrl)
}

func (h Host) v1DirNow(ctrl string) string {
	if h.V2Root() == h.Root {
		return ""
	}
	names := []string{ctrl}
	if ctrl == "cpu" {
		names = append(names, "cpu,cpuacct", "cpuacct,cpu")
	}
	for _, n := range names {
		d := filepath.Join(h.Root, n)
		if isFile(filepath.Join(d, "cgroup.procs")) {
			return d
		}
	}
	return ""
}

// Version is "v2", "hybrid", "v1" or "none".
func (h Host) Version() string {
	v2 := h.V2Root()
	switch {
	case v2 == h.Root:
		return "v2"
	case v2 != "":
		return "hybrid"
	}
	for _, c := range append(slices.Clone(Controllers), "memory", "devices", "freezer") {
		if h.V1Dir(c) != "" {
			return "v1"
		}
	}
	return "none"
}

// v2Controllers: the controllers the v2 root offers (on a hybrid host
// normally none: v1 holds them).
func (h Host) v2Controllers() []string {
	if l := h.layout; l != nil {
		l.mu.Lock()
		c := l.v2Ctls
		l.mu.Unlock()
		if c == nil {
			cs := h.v2ControllersNow()
			l.mu.Lock()
			l.v2Ctls, c = &cs, &cs
			l.mu.Unlock()
		}
		return slices.Clone(*c)
	}
	return h.v2ControllersNow()
}

func (h Host) v2ControllersNow() []string {
	v2 := h.V2Root()
	if v2 == "" {
		return nil
	}
	b, _ := os.ReadFile(filepath.Join(v2, "cgroup.controllers"))
	return strings.Fields(string(b))
}

// Hierarchy is where ctrl is: "v2", "v1" or "none".
func (h Host) Hierarchy(ctrl string) string {
	if slices.Contains(h.v2Controllers(), ctrl) {
		return "v2"
	}
	if h.V1Dir(ctrl) != "" {
		return "v1"
	}
	return "none"
}

// OwnV2 is the caller's cgroup v2 path ("0::/path" in /proc/self/cgroup).
func (h Host) OwnV2() string {
	for _, l := range strings.Split(h.Self, "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			return p
		}
	}
	return ""
}

// userManager is the cgroup of the caller's systemd user manager, which
// a user scope is made under.
func (h Host) userManager() string {
	return filepath.Join(h.V2Root(), "user.slice", fmt.Sprintf("user-%d.slice", h.Euid), fmt.Sprintf("user@%d.service", h.Euid))
}

// scopeProblem says why no delegated systemd user scope can be had ("" when one can).
func (h Host) scopeProblem() string {
	rt := ""
	if h.Getenv != nil {
		rt = h.Getenv("XDG_RUNTIME_DIR")
	}
	if rt == "" {
		return "XDG_RUNTIME_DIR is not set (no systemd user session)"
	}
	if _, err := os.Stat(filepath.Join(rt, "bus")); err != nil {
		return fmt.Sprintf("no systemd user bus at %s/bus", rt)
	}
	if h.LookPath == nil {
		return "busctl (systemd) not found"
	}
	if _, err := h.LookPath("busctl"); err != nil {
		return "busctl (systemd) not found in PATH"
	}
	return ""
}

// Probe says, per controller, where it is and whether fedmem-run could
// enforce a limit with it for this caller.
func (h Host) Probe() []Status {
	var out []Status
	for _, c := range Controllers {
		s := Status{Controller: c, Hierarchy: h.Hierarchy(c)}
		switch s.Hierarchy {
		case "none":
			s.Why = fmt.Sprintf("no cgroup hierarchy has the %s controller (v2 root %q offers %q)", c, h.V2Root(), strings.Join(h.v2Controllers(), " "))
		case "v1":
			d := h.V1Dir(c)
			if h.Euid == 0 || unix.Access(d, unix.W_OK) == nil {
				s.Enforce, s.Via = true, "cgroup v1 "+d+"/fedmem-<session>"
				if c == "cpu" {
					s.Via = "cgroup v1 " + d + "/" + Slice + "/fedmem-<session>"
				}
			} else {
				s.Why = fmt.Sprintf("cgroup v1 %s is not writable by uid %d (run as root)", d, h.Euid)
			}
		case "v2":
			if h.Euid == 0 {
				s.Enforce, s.Via = true, "cgroup v2 "+filepath.Join(h.V2Root(), "fedmem.slice")+"/<session>, entered with CLONE_INTO_CGROUP"
				break
			}
			if p := h.scopeProblem(); p != "" {
				s.Why = "an unprivileged caller needs a delegated systemd user scope and: " + p
				break
			}
			b, err := os.ReadFile(filepath.Join(h.userManager(), "cgroup.controllers"))
			if err != nil {
				s.Why = fmt.Sprintf("systemd user manager's cgroup unreadable: %v", err)
			} else if !slices.Contains(strings.Fields(string(b)), c) {
				s.Why = fmt.Sprintf("systemd does not delegate %s to user@%d.service (it has %q; set Delegate= in user@.service)", c, h.Euid, strings.TrimSpace(string(b)))
			} else {
				s.Enforce, s.Via = true, "cgroup v2 delegated systemd user scope fedmem-<session>.scope (fedmem-run moves into it), entered with CLONE_INTO_CGROUP"
			}
		}
		out = append(out, s)
	}
	return out
}

// CPUShare says, for --explain, whether sessions would share fedmem.slice's
// CPU weight here, where, or why not.
func (h Host) CPUShare() string {
	for _, st := range h.Probe() {
		if st.Controller != "cpu" {
			continue
		}
		switch {
		case !st.Enforce:
			return "cpu: sessions NOT pooled under " + Slice + " (" + st.Why + "): each session's processes compete for CPU on their own (an autogroup each with sched_autogroup), so many sessions can crowd out the gate; not a fail-closed guarantee"
		case st.Hierarchy == "v1":
			return fmt.Sprintf("cpu: sessions share %s's weight (%s, cpu.shares=%d each)", Slice, st.Via, SharesV1)
		case h.Euid == 0:
			return fmt.Sprintf("cpu: sessions share %s's weight (%s, cpu.weight=%d each)", Slice, st.Via, WeightV2)
		default:
			return fmt.Sprintf("cpu: each session has its own cpu cgroup (cpu.weight=%d) in a delegated systemd user scope, not pooled under %s", WeightV2, Slice)
		}
	}
	return "cpu: sessions NOT pooled under " + Slice
}

// Limits are the limits a session cgroup enforces; zero means none.
type Limits struct {
	Memory int64
	Pids   int
	// CPU is in cores (1.5: one and a half CPUs of time per period).
	CPU float64
	// Share puts the session in a cpu cgroup under the shared fedmem.slice
	// even without a CPU limit: every session gets the default weight
	// there, and all of them together weigh as one sibling of the host's
	// other CPU users (a task in a non-root cpu cgroup is not autogrouped),
	// so no number of sessions can starve the gate or the host.
	Share bool
}

// Slice is the cgroup every session's cgroup is made under (for cpu on
// cgroup v1 too): one CPU entity for all sessions together.
const Slice = "fedmem.slice"

// Default weights: cpu.shares (v1) and cpu.weight (v2) of a new cgroup.
const (
	SharesV1 = 1024
	WeightV2 = 100
)

func (l Limits) want() []string {
	var w []string
	if l.Memory > 0 {
		w = append(w, "memory")
	}
	if l.Pids > 0 {
		w = append(w, "pids")
	}
	if l.CPU > 0 || l.Share {
		w = append(w, "cpu")
	}
	return w
}

// Session is a session's cgroups.
type Session struct {
	v1    map[string]string // controller → v1 directory
	v2    string            // the session's v2 directory ("" none)
	v2Ctl []string          // controllers it limits
	fd    *os.File          // v2 directory, for CLONE_INTO_CGROUP
	made  []string          // directories to remove, deepest last
	notes []string
}

// ControllerError is a controller fedmem could not set up.
type ControllerError struct {
	Controller string
	Err        error
}

func (e *ControllerError) Error() string { return e.Controller + ": " + e.Err.Error() }
func (e *ControllerError) Unwrap() error { return e.Err }

// New creates the cgroups for the limits that are set (nil, nil when none
// is). A controller that cannot be set up fails the whole call with a
// *ControllerError naming it; the caller decides whether that limit may go
// unenforced and calls again without it.
func (h Host) New(session string, l Limits) (*Session, error) {
	want := l.want()
	if len(want) == 0 {
		return nil, nil
	}
	s := &Session{v1: map[string]string{}}
	var v2 []string
	for _, c := range want {
		switch h.Hierarchy(c) {
		case "v2":
			v2 = append(v2, c)
		case "v1":
			if err := s.newV1(h, h.V1Dir(c), session, c, l); err != nil {
				s.Remove()
				return nil, &ControllerError{c, err}
			}
		default:
			s.Remove()
			return nil, &ControllerError{c, fmt.Errorf("no cgroup v1 %s hierarchy and no cgroup v2 %s controller under %s", c, c, h.Root)}
		}
	}
	if len(v2) > 0 {
		if err := s.newV2(h, session, v2, l); err != nil {
			s.Remove()
			var ce *ControllerError
			if errors.As(err, &ce) { // one controller, e.g. not delegated
				return nil, err
			}
			return nil, &ControllerError{v2[0], err}
		}
	}
	return s, nil
}

func (s *Session) newV1(h Host, base, session, c string, l Limits) error {
	if c == "cpu" {
		// All sessions under one parent: together one CPU entity.
		base = filepath.Join(base, Slice)
		if err := h.mkdir(base); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("create cgroup %s: %w", base, err)
		}
	}
	dir := filepath.Join(base, "fedmem-"+session)
	if err := h.mkdir(dir); err != nil {
		return fmt.Errorf("create cgroup %s: %w", dir, err)
	}
	s.v1[c] = dir
	s.made = append(s.made, dir)
	var files [][2]string
	switch c {
	case "pids":
		files = [][2]string{{"pids.max", strconv.Itoa(l.Pids)}}
		s.notes = append(s.notes, fmt.Sprintf("pids=%d (cgroup v1 pids.max)", l.Pids))
	case "memory":
		m := strconv.FormatInt(l.Memory, 10)
		files = [][2]string{{"memory.limit_in_bytes", m}, {"memory.memsw.limit_in_bytes", m}}
		s.notes = append(s.notes, fmt.Sprintf("memory=%d (cgroup v1 memory.limit_in_bytes)", l.Memory))
	case "cpu":
		files = [][2]string{{"cpu.shares", strconv.Itoa(SharesV1)}}
		s.notes = append(s.notes, shareNote("v1", dir, "cpu.shares", SharesV1, filepath.Join(base, "cpu.shares")))
		if l.CPU > 0 {
			files = append(files, [2]string{"cpu.cfs_period_us", strconv.Itoa(CPUPeriod)}, [2]string{"cpu.cfs_quota_us", strconv.FormatInt(cpuQuota(l.CPU), 10)})
			s.notes = append(s.notes, fmt.Sprintf("cpu=%g (cgroup v1 cpu.cfs_quota_us)", l.CPU))
		}
	}
	for _, f := range files {
		err := os.WriteFile(filepath.Join(dir, f[0]), []byte(f[1]), 0o644)
		if err != nil && !(f[0] == "memory.memsw.limit_in_bytes" && errors.Is(err, os.ErrNotExist)) {
			return fmt.Errorf("set %s/%s: %w", dir, f[0], err)
		}
	}
	return nil
}

// shareNote says that the session shares fedmem.slice's CPU weight, and
// what that weight is (the slice's own file, read now).
func shareNote(v, dir, file string, each int, sliceFile string) string {
	w := "?"
	if b, err := os.ReadFile(sliceFile); err == nil {
		w = strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("cpu: sessions share %s's weight (cgroup %s %s, %s=%d each; %s %s=%s, one sibling of the host's other CPU users)", Slice, v, dir, file, each, Slice, file, w)
}

func cpuQuota(cores float64) int64 {
	q := int64(cores*CPUPeriod + 0.5)
	if q < 1000 { // the kernel's minimum quota is 1ms
		q = 1000
	}
	return q
}

// enable turns the controllers on in dir's cgroup.subtree_control (those
// already on are left alone).
func enable(dir string, ctls []string) error {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return fmt.Errorf("read %s/cgroup.subtree_control: %w", dir, err)
	}
	var on []string
	for _, w := range strings.Fields(string(b)) {
		on = append(on, strings.TrimPrefix(w, "+")) // a test tree keeps the "+c" written
	}
	avail, _ := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	for _, c := range ctls {
		if slices.Contains(on, c) {
			continue
		}
		if !slices.Contains(strings.Fields(string(avail)), c) {
			return &ControllerError{c, fmt.Errorf("the %s controller is not available in %s (cgroup.controllers: %q; not delegated to it)", c, dir, strings.TrimSpace(string(avail)))}
		}
		if err := appendFile(filepath.Join(dir, "cgroup.subtree_control"), "+"+c); err != nil {
			hint := ""
			if errors.Is(err, unix.EBUSY) {
				hint = " (the cgroup holds processes: cgroup v2 allows controllers only in cgroups without processes of their own)"
			}
			return &ControllerError{c, fmt.Errorf("enable %s in %s/cgroup.subtree_control: %w%s", c, dir, err, hint)}
		}
	}
	return nil
}

// appendFile writes one value the way echo >> does: a real cgroup file
// takes each write as a command; a test file keeps them all.
func appendFile(name, v string) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(v + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// newV2 makes the session's v2 cgroup: as root under <v2root>/fedmem.slice,
// otherwise in a delegated systemd user scope.
func (s *Session) newV2(h Host, session string, ctls []string, l Limits) error {
	v2 := h.V2Root()
	var parent string
	how := "fedmem.slice"
	if h.Euid == 0 {
		// The root cgroup is exempt from the no-internal-processes rule;
		// fedmem.slice holds no process, so both can delegate controllers.
		if err := enable(v2, ctls); err != nil {
			return err
		}
		parent = filepath.Join(v2, "fedmem.slice")
		if err := h.mkdir(parent); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("create cgroup %s: %w", parent, err)
		}
	} else {
		if p := h.scopeProblem(); p != "" {
			return fmt.Errorf("cgroup v2 limits for an unprivileged caller need a delegated systemd user scope, and: %s", p)
		}
		scope, err := s.startScope(h, session)
		if err != nil {
			return err
		}
		parent, how = scope, "systemd user scope "+filepath.Base(scope)
	}
	if err := enable(parent, ctls); err != nil {
		return err
	}
	dir := filepath.Join(parent, "fedmem-"+session)
	if err := h.mkdir(dir); err != nil {
		return fmt.Errorf("create cgroup %s: %w", dir, err)
	}
	s.made = append(s.made, dir)
	s.v2, s.v2Ctl = dir, ctls
	for _, c := range ctls {
		var files [][2]string
		switch c {
		case "memory":
			m := strconv.FormatInt(l.Memory, 10)
			files = [][2]string{{"memory.max", m}, {"memory.swap.max", "0"}}
			s.notes = append(s.notes, fmt.Sprintf("memory=%d (cgroup v2 memory.max, memory.swap.max=0, %s)", l.Memory, how))
		case "pids":
			files = [][2]string{{"pids.max", strconv.Itoa(l.Pids)}}
			s.notes = append(s.notes, fmt.Sprintf("pids=%d (cgroup v2 pids.max, %s)", l.Pids, how))
		case "cpu":
			files = [][2]string{{"cpu.weight", strconv.Itoa(WeightV2)}}
			if h.Euid == 0 {
				s.notes = append(s.notes, shareNote("v2", dir, "cpu.weight", WeightV2, filepath.Join(parent, "cpu.weight")))
			} else {
				// Each scope is its own unit: not pooled with other sessions.
				s.notes = append(s.notes, fmt.Sprintf("cpu: the session has its own cpu cgroup %s (cpu.weight=%d) in %s, weighed beside the user's other units, not pooled with other sessions under %s", dir, WeightV2, how, Slice))
			}
			if l.CPU > 0 {
				files = append(files, [2]string{"cpu.max", fmt.Sprintf("%d %d", cpuQuota(l.CPU), CPUPeriod)})
				s.notes = append(s.notes, fmt.Sprintf("cpu=%g (cgroup v2 cpu.max, %s)", l.CPU, how))
			}
		}
		for _, f := range files {
			err := os.WriteFile(filepath.Join(dir, f[0]), []byte(f[1]), 0o644)
			// No swap accounting (swapaccount=0, no swap): nothing to cap.
			if err != nil && !(f[0] == "memory.swap.max" && errors.Is(err, os.ErrNotExist)) {
				return fmt.Errorf("set %s/%s: %w", dir, f[0], err)
			}
		}
	}
	fd, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("open cgroup %s: %w", dir, err)
	}
	s.fd = fd
	return nil
}

// startScope asks the user's systemd manager (D-Bus StartTransientUnit,
// through busctl) for a delegated scope holding fedmem-run itself, then
// moves fedmem-run into a leaf of it so that the scope may enable
// controllers for the sandbox's sibling cgroup (no internal processes).
// fedmem-run has to be inside: clone3(CLONE_INTO_CGROUP) needs write access
// to cgroup.procs of the common ancestor of the caller's cgroup and the
// target, and only the scope is delegated to the user. systemd moves the
// process (the system manager's AttachProcessesToUnit, as for
// systemd-run --user --scope); the scope ends when fedmem-run exits.
func (s *Session) startScope(h Host, session string) (string, error) {
	busctl, err := h.LookPath("busctl")
	if err != nil {
		return "", fmt.Errorf("busctl not found: %w", err)
	}
	unit := "fedmem-" + session + ".scope"
	out, err := exec.Command(busctl, "--user", "call", "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
		"org.freedesktop.systemd1.Manager", "StartTransientUnit", "ssa(sv)a(sa(sv))", unit, "fail",
		"3", "PIDs", "au", "1", strconv.Itoa(os.Getpid()), "Delegate", "b", "true", "CollectMode", "s", "inactive-or-failed", "0").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("systemd user manager refused the scope %s: %v: %s", unit, err, strings.TrimSpace(string(out)))
	}
	// The call returns once the job is queued; the move follows at once.
	var path string
	for i := 0; i < 500; i++ {
		b, err := os.ReadFile("/proc/self/cgroup")
		if err != nil {
			return "", err
		}
		if path = (Host{Self: string(b)}).OwnV2(); strings.HasSuffix(path, "/"+unit) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.HasSuffix(path, "/"+unit) {
		return "", fmt.Errorf("systemd did not move fedmem-run into %s (still in %q)", unit, path)
	}
	scope := filepath.Join(h.V2Root(), path)
	leaf := filepath.Join(scope, "fedmem-run")
	if err := os.Mkdir(leaf, 0o755); err != nil {
		return "", fmt.Errorf("create cgroup %s: %w (the scope is not delegated to uid %d)", leaf, err, h.Euid)
	}
	if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return "", fmt.Errorf("move fedmem-run into %s: %w", leaf, err)
	}
	return scope, nil
}

// FD is the v2 cgroup directory for SysProcAttr.CgroupFD (nil: no v2 cgroup).
func (s *Session) FD() *os.File {
	if s == nil {
		return nil
	}
	return s.fd
}

// Kill sends every process of the session's cgroup its SIGKILL from
// here, without waiting for the sandbox's init to get a CPU (a SIGKILL to
// the init alone kills the rest of its pid namespace only once the init
// reaches exit, and a flood of writers keeps writing until then):
//   - v2: "1" into its cgroup.kill (Linux 5.14; the kernel also refuses
//     forks into the cgroup while it does);
//   - v1 (no cgroup.kill, no freezer of ours): each process listed in
//     cgroup.procs, through a pidfd, once /proc/PID/cgroup says it is in
//     the session's cgroup (a pid reused since the listing gets nothing),
//     listing again until a round finds none left alive (a child forked
//     meanwhile is in the next listing), at most killRounds rounds.
//
// false: no cgroup of the session to go through.
func (s *Session) Kill() bool {
	if s == nil {
		return false
	}
	if s.v2 != "" && os.WriteFile(filepath.Join(s.v2, "cgroup.kill"), []byte("1"), 0) == nil {
		return true
	}
	dir := ""
	for _, c := range []string{"pids", "cpu", "memory"} {
		if d, ok := s.v1[c]; ok {
			dir = d
			break
		}
	}
	if dir == "" {
		return false
	}
	const killRounds = 20
	for round := 0; round < killRounds; round++ {
		b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		if err != nil {
			return round > 0
		}
		signalled := 0
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil && pid > 0 && killIn(pid, filepath.Base(dir)) {
				signalled++
			}
		}
		if signalled == 0 {
			return true
		}
	}
	return true
}

// killIn sends SIGKILL to pid through a pidfd if /proc/PID/cgroup, read
// while the pidfd holds the process, names a cgroup called leaf; true if
// the signal went to a live process.
func killIn(pid int, leaf string) bool {
	pfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return false
	}
	defer unix.Close(pfd)
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil || !strings.Contains(string(raw), "/"+leaf+"\n") {
		return false
	}
	// A process that died since is a zombie or gone: the pidfd's signal
	// fails (ESRCH) and never reaches a pid reused meanwhile.
	if unix.PidfdSendSignal(pfd, unix.Signal(0), nil, 0) != nil {
		return false
	}
	return unix.PidfdSendSignal(pfd, unix.SIGKILL, nil, 0) == nil
}

// WarmAttach starts, in the background, the wait that makes the first
// move of a process into a cgroup v1 slow, so that Add's move of the
// sandbox's init, later, does not wait for it again: the kernel's first
// writer of any cgroup.procs waits out an RCU grace period (the global
// threadgroup lock's rcu_sync) — 3 to 13 ms on a busy machine, measured,
// most of a launch's wait between the init's clone and its config — and a
// writer within the next grace period does not. The warm-up is this
// process moved into the cgroup it is in already (its v1 cgroup of the
// first controller of l that v1 holds, from /proc/self/cgroup): nothing
// moves, no limit or charge changes. A write that fails (another caller,
// no such cgroup) is ignored: Add is then as slow as before, no slower.
// Nothing is done (nil) without a v1 controller to add to.
func (h Host) WarmAttach(l Limits) *Warm {
	for _, c := range l.want() {
		if h.Hierarchy(c) != "v1" {
			continue
		}
		dir, own := h.V1Dir(c), h.ownV1(c)
		if dir == "" || own == "" {
			return nil
		}
		w := &Warm{procs: filepath.Join(dir, own, "cgroup.procs"), pid: []byte(strconv.Itoa(os.Getpid()))}
		w.start()
		return w
	}
	return nil
}

// Warm is a warm-up WarmAttach started.
type Warm struct {
	procs string
	pid   []byte
	done  chan struct{} // closed when the last warm-up's write returned
}

func (w *Warm) start() {
	done := make(chan struct{})
	w.done = done
	go func() {
		_ = os.WriteFile(w.procs, w.pid, 0)
		close(done)
	}()
}

// Again, right before the process Add will move is made, warms up once
// more if the last warm-up is over: the kernel's state lasts one grace
// period after it, and a quick first warm-up may be that far behind
// already. A warm-up within that period returns at once; one past it
// waits while the process is made. A nil Warm does nothing.
func (w *Warm) Again() {
	if w == nil {
		return
	}
	select {
	case <-w.done:
		w.start()
	default: // still waiting: Add comes within its period
	}
}

// ownV1 is the caller's cgroup in the v1 hierarchy holding ctrl
// ("N:ctrl[,other]:/path" in /proc/self/cgroup), "" when Self has none.
func (h Host) ownV1(ctrl string) string {
	for _, l := range strings.Split(h.Self, "\n") {
		parts := strings.SplitN(l, ":", 3)
		if ctrl != "" && len(parts) == 3 && slices.Contains(strings.Split(parts[1], ","), ctrl) && strings.HasPrefix(parts[2], "/") {
			return parts[2]
		}
	}
	return ""
}

// NeedsAdd: the init must be moved into v1 cgroups after it starts.
func (s *Session) NeedsAdd() bool { return s != nil && len(s.v1) > 0 }

// Add moves a process into every v1 session cgroup (v2 is entered at clone).
func (s *Session) Add(pid int) error {
	for _, dir := range s.v1 {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("join cgroup %s: %w", dir, err)
		}
	}
	return nil
}

// Notes say how each limit is enforced, for the report's layers.limits.
func (s *Session) Notes() []string { return s.notes }

// Hits names the limits the kernel enforced during the session: pids when
// a fork was refused, memory when the OOM killer ran (v2 memory.events
// oom_kill; v1 failcnt or oom_control oom_kill).
func (s *Session) Hits() []string {
	var out []string
	hitPids := false
	if dir, ok := s.v1["pids"]; ok && counter(filepath.Join(dir, "pids.events"), "max") > 0 {
		hitPids = true
	}
	if s.v2 != "" && slices.Contains(s.v2Ctl, "pids") && counter(filepath.Join(s.v2, "pids.events"), "max") > 0 {
		hitPids = true
	}
	if hitPids {
		out = append(out, "pids")
	}
	hitMem := false
	if dir, ok := s.v1["memory"]; ok {
		for _, f := range []string{"memory.failcnt", "memory.memsw.failcnt"} {
			if b, err := os.ReadFile(filepath.Join(dir, f)); err == nil && strings.TrimSpace(string(b)) != "0" && strings.TrimSpace(string(b)) != "" {
				hitMem = true
			}
		}
		if counter(filepath.Join(dir, "memory.oom_control"), "oom_kill") > 0 {
			hitMem = true
		}
	}
	if s.v2 != "" && slices.Contains(s.v2Ctl, "memory") && counter(filepath.Join(s.v2, "memory.events"), "oom_kill") > 0 {
		hitMem = true
	}
	if hitMem {
		out = append(out, "memory")
	}
	return out
}

// counter reads "key N" from a flat-keyed cgroup file (0 when absent).
func counter(file, key string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == key {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return 0
}

// Remove deletes the session's cgroups (empty once the sandbox's pid
// namespace is gone). A user scope holds fedmem-run itself and ends with
// it. fedmem.slice stays: other sessions may be using it.
func (s *Session) Remove() {
	if s == nil {
		return
	}
	if s.fd != nil {
		s.fd.Close()
		s.fd = nil
	}
	for i := len(s.made) - 1; i >= 0; i-- {
		dir := s.made[i]
		for try := 0; try < 50; try++ {
			err := unix.Rmdir(dir)
			if err == nil || errors.Is(err, unix.ENOENT) || !errors.Is(err, unix.EBUSY) {
				break
			}
			// The last exiting processes may still be leaving.
			time.Sleep(10 * time.Millisecond)
		}
	}
	s.made = nil
}

func isFile(name string) bool {
	fi, err := os.Stat(name)
	return err == nil && fi.Mode().IsRegular()
}
