package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/mounts/pin"
	"github.com/fedmem/fedmem/sandbox/cgroups"
	"github.com/fedmem/fedmem/sandbox/oci"
)

// OCIInitArg, as argv[1] of the init, says a container runtime built the
// root from the sandbox/oci translation of the plan: the init skips
// buildRoot, checks what the runtime made (checkOCIRoot) and verifies it
// against the plan like any root, then applies the same layers.
const OCIInitArg = "oci"

// initCaps are what fedmem's init holds inside the container, in its own
// user namespace, until it drops every one before forking the agent (as
// in the namespace backend, whose init holds all of them there): chown of
// the private pty, reading the idmapped writable paths for Landlock, the
// agent's uid and gid, signals forwarded to the agent (another uid), the
// bounding set drop, loopback up, and the procfs mask fix-up
// (finishOCIRoot).
var initCaps = []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_KILL", "CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_NET_ADMIN", "CAP_SYS_ADMIN"}

// containerRuntime is what differs between the container backends: the
// helper that runs the bundle.
type containerRuntime struct {
	name string
	// command returns the helper's command line for a bundle; nfds
	// descriptors from 3 on go to the container's process, control is the
	// helper's descriptor number of the kill/cleanup pipe, pidFd of the
	// pipe it writes the container init's pid to.
	command func(bundle, id string, nfds, control, pidFd int) *exec.Cmd
	// rootfs is root.path; image says it is an image's root.
	rootfs string
	image  bool
	// fdSocket: the runtime cannot hand descriptors to the container's
	// process (containerd); the helper relays them over a socket in the
	// bundle's fds directory, bound at OCIFdDir (see receiveInitFds).
	fdSocket bool
	notes    []string
	// enforced is the backend's enforced() (the report's enforced_by).
	enforced []string
}

// helperPath finds a helper binary beside the running executable, then in
// PATH.
func helperPath(explicit, name string) (string, error) {
	if explicit != "" {
		return explicit, nil
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return exec.LookPath(name)
}

// runContainer runs spec through a container runtime helper: the plan is
// translated once (sandbox/oci), written as a bundle, and the helper runs
// it with fedmem's own init as the container's process. The init speaks
// the same protocol as in the namespace backend (config, sync, pty and
// proxy descriptors), so everything from here on is the same run.
func runContainer(ctx context.Context, spec *Spec, rt containerRuntime, stateDir string) (*Result, error) {
	if err := rt.refuse(spec); err != nil {
		return nil, err
	}
	s := *spec
	spec = &s
	releaseInbox, err := holdInbox(spec)
	defer releaseInbox()
	if err != nil {
		return nil, err
	}
	idp, err := planIdentity(spec)
	if err != nil {
		return nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, &Error{Code: ExitFedmemError, Stage: mounts.StageSetup, Msg: "own executable: " + err.Error()}
	}
	cfg, notes := containerInit(spec, idp, rt.name)
	// The runtime binds the inbox by name (a path in the OCI spec): the
	// init checks the mount it finds there is the folder made (verifyInbox).
	if err := setInboxIdentity(spec, &cfg); err != nil {
		return nil, err
	}
	id := "fedmem-" + spec.Plan.Session + "-" + randHex(4)
	bundle := filepath.Join(stateDir, "bundles", id)
	ocispec, err := containerSpec(spec, rt, idp, id, bundle, exe)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(bundle)
	if err := writeBundle(ocispec, rt, bundle); err != nil {
		return nil, err
	}
	return superviseContainer(ctx, spec, rt, &cfg, hostLayers{
		backend: rt.name, namespaces: sandboxNamespaces(spec.Plan), limits: notes,
		identity: &idp.id, enforced: rt.enforced, notes: rt.notes,
	}, id, bundle)
}

// refuse says why rt cannot run spec at all: a proposed workdir (never the
// real workdir bound writable in place of a proposal), or a caller that is
// not root.
func (rt containerRuntime) refuse(spec *Spec) error {
	if spec.Plan.ProposedWorkdir() != nil {
		return &Error{Code: ExitFedmemError, Stage: mounts.StageBackend, Msg: fmt.Sprintf("the %s backend cannot build the profile's `workdir: propose` (an overlay the namespace backend mounts): use --backend namespace, or a profile with workdir: direct", rt.name)}
	}
	if os.Geteuid() != 0 {
		return &Error{Code: ExitFedmemError, Stage: mounts.StageBackend, Msg: "the " + rt.name + " backend needs root (use --backend namespace for rootless sessions)"}
	}
	return nil
}

// containerInit is the init's config for a container session and the
// notes on how each limit is enforced (the runtime's cgroup for pids,
// memory and cpu; rlimits the init sets; fedmem-run for the rest).
func containerInit(spec *Spec, idp *idPlan, runtime string) (InitConfig, []string) {
	cfg := InitConfig{
		Plan: spec.Plan, Argv: spec.Argv, Env: spec.Env, Dir: spec.Dir, TTY: spec.TTY,
		RequireLandlock: spec.RequireLandlock, RequireSeccomp: spec.RequireSeccomp,
		FSDenials: spec.FSDenials,
	}
	if idp.cred != nil {
		cfg.AgentSwitch, cfg.AgentUID, cfg.AgentGID, cfg.AgentGroups = true, spec.UID, spec.GID, idp.agentGroups
	}
	l := spec.Limits
	notes := fileRlimits(l, &cfg)
	if l.Pids > 0 {
		notes = append(notes, fmt.Sprintf("pids=%d (OCI linux.resources.pids: %s's cgroup)", l.Pids, runtime))
	}
	if l.Memory > 0 {
		notes = append(notes, fmt.Sprintf("memory=%d (OCI linux.resources.memory: %s's cgroup)", l.Memory, runtime))
	}
	notes = append(notes, fmt.Sprintf("cpu: sessions share %s's weight (OCI cgroupsPath /%s/fedmem-<session>-<hex>: %s's cgroup at its default weight)", cgroups.Slice, cgroups.Slice, runtime))
	notes = append(notes, parentLimitNotes(l, "container")...)
	notes = append(notes, tmpNotes(spec.Plan)...)
	return cfg, notes
}

// ociIDMappings are a user namespace's id maps in the OCI spec's words.
func ociIDMappings(m []syscall.SysProcIDMap) []specs.LinuxIDMapping {
	var out []specs.LinuxIDMapping
	for _, x := range m {
		out = append(out, specs.LinuxIDMapping{ContainerID: uint32(x.ContainerID), HostID: uint32(x.HostID), Size: uint32(x.Size)})
	}
	return out
}

// containerSpec is the OCI spec of the session: the plan's one
// translation (sandbox/oci) with fedmem's init as the container's process,
// and fedmem-run's own executable bound read-only under the name the init
// dispatches on (the runtime execs Args[0] found in PATH).
func containerSpec(spec *Spec, rt containerRuntime, idp *idPlan, id, bundle, exe string) (*specs.Spec, error) {
	initArgs := []string{InitArg0, OCIInitArg}
	if rt.fdSocket {
		initArgs = append(initArgs, OCIFdSocketArg)
	}
	l := spec.Limits
	ocispec, err := oci.Translate(oci.Input{
		Plan: spec.Plan, Rootfs: rt.rootfs, Image: rt.image,
		Args: initArgs, Env: append(initEnv(), "PATH="+oci.InitDir), Cwd: "/",
		Hostname: spec.Hostname, UID: 0, GID: 0,
		UIDMap: ociIDMappings(idp.uidMaps), GIDMap: ociIDMappings(idp.gidMaps),
		InitCaps: initCaps, Pids: int64(l.Pids), Memory: l.Memory, CPU: l.CPU,
		// No runtime seccomp: the filter is fedmem's init's to install,
		// right before it forks the agent, exactly as in the namespace
		// backend: the runtime's copy (seccomp.OCI, same rules) would be
		// in force from the init's first instruction and forbid the mask
		// fix-up (finishOCIRoot). The agent gets the same filter either
		// way; the test suites check it.
		Seccomp:     nil,
		CgroupsPath: "/" + cgroups.Slice + "/" + id, // beside the namespace backend's sessions: one CPU entity for all
		Annotations: map[string]string{"fedmem.session": spec.Plan.Session},
		IDMapped:    ociIDMapped(spec, &idp.id),
		HomeIDMap:   ociHomeIDMap(spec, &idp.id),
		Placeholder: filepath.Join(bundle, "placeholder"), PlaceholderJSON: filepath.Join(bundle, "placeholder.json"),
	})
	if err != nil {
		return nil, &Error{Code: ExitFedmemError, Stage: mounts.StageSpec, Msg: err.Error()}
	}
	faultOCI(ocispec, spec.Plan) // fedmemfault builds only (test/escape TestVerificationFailsClosed)
	ocispec.Mounts = append(ocispec.Mounts, specs.Mount{Destination: filepath.Join(oci.InitDir, InitArg0), Type: "bind", Source: exe, Options: []string{"bind", "ro", "nosuid", "nodev"}})
	return ocispec, nil
}

// writeBundle writes the bundle the helper runs: what an absent protected
// file reads as inside (the placeholders), the descriptor socket's
// directory for a runtime that relays them (fdSocket), and config.json.
func writeBundle(ocispec *specs.Spec, rt containerRuntime, bundle string) error {
	setupErr := func(err error) error {
		return &Error{Code: ExitFedmemError, Stage: mounts.StageSetup, Msg: err.Error()}
	}
	if err := os.MkdirAll(bundle, 0o700); err != nil {
		return setupErr(err)
	}
	for name, body := range map[string]string{"placeholder": "", "placeholder.json": "{}"} {
		if err := os.WriteFile(filepath.Join(bundle, name), []byte(body), 0o444); err != nil {
			return setupErr(err)
		}
	}
	if rt.fdSocket {
		fdDir := filepath.Join(bundle, "fds")
		if err := os.Mkdir(fdDir, 0o700); err != nil {
			return setupErr(err)
		}
		ocispec.Mounts = append(ocispec.Mounts, specs.Mount{Destination: OCIFdDir, Type: "bind", Source: fdDir, Options: []string{"rbind", "ro", "nosuid", "nodev", "noexec"}})
	}
	raw, err := json.MarshalIndent(ocispec, "", "  ")
	if err == nil {
		err = os.WriteFile(filepath.Join(bundle, "config.json"), raw, 0o600)
	}
	if err != nil {
		return setupErr(err)
	}
	return nil
}

// containerKill ends a container session from here. Once the init's pid
// is known: SIGKILL to every process of the container's cgroup (cgroupKill:
// the init's death alone ends its pid namespace only once the dying init
// gets a CPU) and to the init through a pidfd; and always the helper's kill
// over the control pipe, which alone is a round trip through the runtime
// (containerd: gRPC, shim, runc) while a flood of writers goes on.
type containerKill struct {
	id  string
	ctl *os.File // the control pipe's write end
	mu  sync.Mutex
	fd  int // pidfd of the container's init, 0: not yet known
	cg  *cgroupKill
	// closed: the session is over, the pidfd is closed (or never kept).
	closed bool
}

// setInit makes the container's init, pid in our pid namespace, known.
func (k *containerKill) setInit(pid int) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return
	}
	cg := containerCgroup(pid, fd, k.id)
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		unix.Close(fd)
		return
	}
	k.fd, k.cg = fd, cg
}

func (k *containerKill) kill() {
	k.mu.Lock()
	if k.fd > 0 && !k.closed {
		k.cg.kill()
		_ = unix.PidfdSendSignal(k.fd, unix.SIGKILL, nil, 0)
	}
	k.mu.Unlock()
	_, _ = k.ctl.Write([]byte{'k'})
}

// close ends kill's use of the init's pidfd.
func (k *containerKill) close() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.closed = true
	if k.fd > 0 {
		unix.Close(k.fd)
	}
}

// readInitPid reads the pid of the container's init (in our pid
// namespace) that the helper writes on r once the runtime made it, makes
// it known to k before the agent can have started (the limits kill
// through it), and sends it: 0 when the helper died before it knew.
func readInitPid(r io.Reader, k *containerKill) <-chan int {
	initPid := make(chan int, 1)
	go func() {
		b, _ := io.ReadAll(r)
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if n > 0 {
			k.setInit(n)
		}
		initPid <- n
	}()
	return initPid
}

// superviseContainer starts the helper on the written bundle, hands the
// init its config and watches the session to its end: the same watch and
// epilogue as the namespace backend's.
func superviseContainer(ctx context.Context, spec *Spec, rt containerRuntime, cfg *InitConfig, host hostLayers, id, bundle string) (*Result, error) {
	link, err := newInitLink(spec, cfg)
	if err != nil {
		return nil, err
	}
	defer link.Close()
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil, &Error{Code: ExitFedmemError, Stage: mounts.StageSetup, Msg: err.Error()}
	}
	defer ctlR.Close()
	defer ctlW.Close()
	// The helper writes the container's init's pid (in our pid namespace)
	// here once the runtime made it: the tmp_bytes watch reads the
	// sandbox's /tmp through /proc/PID/root, as for the namespace backend.
	pidR, pidW, err := os.Pipe()
	if err != nil {
		return nil, &Error{Code: ExitFedmemError, Stage: mounts.StageSetup, Msg: err.Error()}
	}
	defer pidR.Close()
	defer pidW.Close()
	nfds := len(link.files)
	cmd := rt.command(bundle, id, nfds, 3+nfds, 4+nfds)
	cmd.ExtraFiles = append(slices.Clone(link.files), ctlR, pidW)
	link.setStdio(cmd, spec)
	release, err := guardPlaceholders(spec)
	var res *Result
	defer func() { release(res != nil && res.CoversLost != "") }()
	if err != nil {
		return nil, err
	}
	// The runtime binds each source by its path: right before it starts,
	// each must still be the folder the plan judged (the init checks the
	// mounts it made again: pin.CheckMounted).
	if err := pin.CheckAll(spec.Plan); err != nil {
		return nil, &Error{Code: ExitFedmemError, Stage: mounts.StageMounts, Msg: err.Error()}
	}

	sigs, stopSigs := forwarded(spec)
	defer stopSigs()

	link.sendConfig(cfg, nil)
	cloned := MonoNow()
	if err := cmd.Start(); err != nil {
		return nil, &Error{Code: ExitFedmemError, Stage: mounts.StageStart, Msg: fmt.Sprintf("%s helper: %v", rt.name, err)}
	}
	k := &containerKill{id: id, ctl: ctlW}
	defer k.close()
	pl := startParentLimits(spec, k.kill)
	defer pl.stop()
	msgs, masters := link.started(spec)
	rec := link.recorder(spec)
	ctlR.Close()
	pidW.Close()
	initPid := readInitPid(pidR, k)
	host.pty = link.relay != nil
	res = host.newResult()
	var tmpFull tmpCap // /tmp or /dev/shm full: limits.tmp_bytes
	w := &watch{spec: spec, res: res, host: host, relay: link.relay, proc: cmd.Process,
		kill: k.kill, masters: masters, sigs: sigs,
		started: func(m InitMessage) map[string]any {
			if pid := <-initPid; pid > 0 {
				tmpFull.start(spec.Plan, pid, k.kill)
			}
			return map[string]any{"phases_ms": startPhases(cloned, m.Phases)}
		}}
	runErr := w.run(ctx, msgs)
	werr := w.reap(cmd)
	res.VaultReads = rec.Finish()
	// The helper read the container's cgroup before it went.
	if b, err := os.ReadFile(filepath.Join(bundle, "limits_hit")); err == nil {
		res.LimitsHit = append(res.LimitsHit, strings.Fields(string(b))...)
	}
	return conclude(spec, res, pl, &tmpFull, runErr, func(res *Result) error {
		// The init said nothing: the helper's status tells (128+n when
		// the container's process was killed by signal n).
		var ee *exec.ExitError
		if errors.As(werr, &ee) && ee.ExitCode() > 128 && ee.ExitCode() != ExitFedmemError {
			res.ExitCode, res.Signal = ee.ExitCode(), ee.ExitCode()-128
			return nil
		}
		return &Error{Code: ExitFedmemError, Stage: mounts.StageInit, Msg: fmt.Sprintf("%s: the container's init ended without a status: %v", rt.name, werr)}
	})
}

// ociIDMapped decides, as idmapBinds does for the namespace backend, which
// writable binds a root caller's agent gets idmapped: those whose source
// the owner owns, owner→agent and agent→owner, so what the agent creates
// stays the owner's and the owner's files are the agent's to write.
func ociIDMapped(spec *Spec, id *Identity) map[string]oci.IDMap {
	if os.Geteuid() != 0 {
		return nil
	}
	owner, ownerG := spec.OwnerUID, spec.OwnerGID
	if !spec.OwnerSet {
		owner, ownerG = os.Getuid(), os.Getgid()
	}
	if owner == spec.UID {
		return nil
	}
	out := map[string]oci.IDMap{}
	if id.Writable == nil {
		id.Writable = map[string]string{}
	}
	for _, m := range spec.Plan.Mounts {
		// The pinned and protected paths inside a writable bind are binds
		// of their own here (the runtime binds host paths), so each needs
		// the same mapping as the tree it stands in.
		// A read-only bind marked Idmap (a listed unix socket, the
		// read-only top of a home in a writable path) too: the agent must
		// be its owner as it is the caller's writable tree's.
		if m.Kind != mounts.BindRW && m.Kind != mounts.Pinned && (m.Kind != mounts.Protected || m.Placeholder) && (m.Kind != mounts.BindRO || !m.Idmap) {
			continue
		}
		var st unix.Stat_t
		if err := unix.Lstat(m.Source, &st); err != nil || int(st.Uid) != owner {
			continue
		}
		out[m.Target] = oci.IDMap{
			UID: []specs.LinuxIDMapping{{ContainerID: uint32(owner), HostID: uint32(spec.UID), Size: 1}, {ContainerID: uint32(spec.UID), HostID: uint32(owner), Size: 1}},
			GID: []specs.LinuxIDMapping{{ContainerID: uint32(ownerG), HostID: uint32(spec.GID), Size: 1}, {ContainerID: uint32(spec.GID), HostID: uint32(ownerG), Size: 1}},
		}
		if m.Kind == mounts.BindRW {
			id.Writable[m.Target] = fmt.Sprintf("idmapped %d→%d", owner, spec.UID) // as idmapBinds says it
		}
	}
	return out
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
