package ctrd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/mount"
	"github.com/containerd/containerd/v2/pkg/cio"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/sandbox/oci/cglimits"
	"github.com/fedmem/fedmem/sandbox/oci/helper"
	"github.com/fedmem/fedmem/sandbox/oci/rootfs"
)

const exitSetup = 125

// Labels on everything the helper creates.
const (
	labelOwner = "fedmem.owner"     // "<pid>@<boot id>" of the helper
	labelKind  = "fedmem.container" // "1"
)

// rootsDir holds the read-only clones of / that host-root containers use,
// under a private tmpfs of the host's mount namespace (the shim mounts
// the rootfs there, so the clone must be visible to it).
const rootsDir = "/run/fedmem/containerd/roots"

// ownerSuffix names, beside a root clone in rootsDir, the file holding
// owner() of the helper that made it.
const ownerSuffix = ".owner"

// Main is fedmem-containerd: `run`, `gc` or `import`.
func Main(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: fedmem-containerd run|gc|import|version --address SOCK --namespace NS …")
		return 2
	}
	fs := flag.NewFlagSet("fedmem-containerd "+args[1], flag.ContinueOnError)
	addr := fs.String("address", "/run/containerd/containerd.sock", "containerd socket")
	ns := fs.String("namespace", "fedmem", "containerd namespace")
	image := fs.String("image", "", "image reference in the local content store (default: the host's / read-only)")
	snapshotter := fs.String("snapshotter", "", "snapshotter for --image (default: containerd's)")
	var rf helper.RunFlags
	rf.Register(fs)
	if err := fs.Parse(args[2:]); err != nil {
		return 2
	}
	c, err := containerd.New(*addr, containerd.WithDefaultNamespace(*ns), containerd.WithTimeout(10*time.Second))
	if err != nil {
		fmt.Fprintf(os.Stderr, "fedmem-containerd: connect %s: %v\n", *addr, err)
		return exitSetup
	}
	defer c.Close()
	ctx := namespaces.WithNamespace(context.Background(), *ns)
	switch args[1] {
	case "version":
		// fedmem doctor: does the daemon answer, and which is it.
		vctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		v, err := c.Version(vctx)
		if err != nil {
			fmt.Fprintf(os.Stderr, "fedmem-containerd: containerd at %s does not answer: %v\n", *addr, err)
			return 1
		}
		fmt.Printf("containerd %s (revision %s) answering at %s; client %s\n", v.Version, v.Revision, *addr, helper.ModuleVersion("github.com/containerd/containerd/v2"))
		return 0
	case "gc":
		n, err := GC(ctx, c)
		fmt.Fprintf(os.Stderr, "fedmem-containerd: removed %d stale containers\n", n)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fedmem-containerd:", err)
			return 1
		}
		return 0
	case "import":
		// import ARCHIVE: an OCI image archive into the namespace's store,
		// unpacked for the snapshotter.
		if fs.NArg() != 1 {
			fmt.Fprintln(os.Stderr, "usage: fedmem-containerd import --address SOCK ARCHIVE")
			return 2
		}
		if err := importArchive(ctx, c, fs.Arg(0), *snapshotter); err != nil {
			fmt.Fprintln(os.Stderr, "fedmem-containerd:", err)
			return 1
		}
		return 0
	case "run":
		code, err := run(ctx, c, runOpts{bundle: rf.Bundle, id: rf.ID, image: *image, snapshotter: *snapshotter, nfds: rf.FDs, control: rf.Control, pidFd: rf.PidFd})
		if err != nil {
			fmt.Fprintln(os.Stderr, "fedmem-containerd:", err)
		}
		return code
	}
	fmt.Fprintf(os.Stderr, "fedmem-containerd: unknown command %q\n", args[1])
	return 2
}

func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return string(b[:min(len(b), 36)])
}

// owner is "<pid>@<boot id>@<start time>": the start time (clock ticks
// since boot, /proc/PID/stat field 22) tells the helper from a later
// process that got its pid back (pid_max is often 32768: a busy host
// reuses pids within seconds, and a GC would then spare a dead helper's
// root for ever).
func owner() string {
	pid := os.Getpid()
	return strconv.Itoa(pid) + "@" + bootID() + "@" + startTime(pid)
}

// startTime is a process's start time in clock ticks since boot ("" when it
// cannot be read: the process is gone).
func startTime(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name (field 2) may hold spaces and parentheses: the
	// fields after it start after the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return ""
	}
	return f[19] // field 22 overall: state is field 3, f[0]
}

// alive reports whether the helper that labelled a container (or made a
// root clone) still runs: same boot, the pid exists, and — for a label
// that records it — the same start time.
func alive(label string) bool {
	parts := strings.Split(strings.TrimSpace(label), "@")
	if len(parts) < 2 || parts[1] != bootID() {
		return false
	}
	pid, err := strconv.Atoi(parts[0])
	if err != nil || pid <= 0 || unix.Kill(pid, 0) != nil {
		return false
	}
	if len(parts) >= 3 && parts[2] != "" {
		return startTime(pid) == parts[2]
	}
	return true
}

// GC deletes the tasks, containers and snapshots of helpers that are gone,
// and the root clones they left.
func GC(ctx context.Context, c *containerd.Client) (int, error) {
	cs, err := c.Containers(ctx, "labels."+labelKind+"==1")
	if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, ctr := range cs {
		labels, err := ctr.Labels(ctx)
		if err != nil || alive(labels[labelOwner]) {
			continue
		}
		if err := destroy(ctx, ctr); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	// rootsDir is the host's, shared by every helper on every daemon: a
	// clone goes only when the helper that made it is gone (its owner
	// file), never because this daemon does not know its container.
	if ents, err := os.ReadDir(rootsDir); err == nil {
		for _, e := range ents {
			if !e.IsDir() {
				continue
			}
			dir := filepath.Join(rootsDir, e.Name())
			who, err := os.ReadFile(dir + ownerSuffix)
			if err == nil && alive(string(who)) {
				continue
			}
			if err != nil {
				if _, err := c.LoadContainer(ctx, e.Name()); err == nil {
					continue // made before owner files: its container says
				}
			}
			_ = rootfs.Release(dir)
			_ = os.Remove(dir + ownerSuffix)
		}
	}
	return n, errors.Join(errs...)
}

func destroy(ctx context.Context, ctr containerd.Container) error {
	if t, err := ctr.Task(ctx, nil); err == nil {
		_ = t.Kill(ctx, unix.SIGKILL)
		if _, err := t.Delete(ctx, containerd.WithProcessKill); err != nil {
			return fmt.Errorf("delete task %s: %w", ctr.ID(), err)
		}
	}
	if err := ctr.Delete(ctx, containerd.WithSnapshotCleanup); err != nil {
		return fmt.Errorf("delete container %s: %w", ctr.ID(), err)
	}
	_ = rootfs.Release(filepath.Join(rootsDir, ctr.ID()))
	_ = os.Remove(filepath.Join(rootsDir, ctr.ID()) + ownerSuffix)
	return nil
}

type runOpts struct {
	bundle, id, image, snapshotter string
	nfds, control, pidFd           int
}

func run(ctx context.Context, c *containerd.Client, o runOpts) (int, error) {
	if o.bundle == "" || o.id == "" {
		return exitSetup, errors.New("run needs --bundle and --id")
	}
	var orphaned atomic.Bool
	defer func() {
		if orphaned.Load() {
			rootfs.RemoveBundle(o.bundle)
		}
	}()
	extra := make([]int, 0, o.nfds)
	for i := 0; i < o.nfds; i++ {
		extra = append(extra, 3+i)
	}
	_ = unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if _, err := GC(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "fedmem-containerd: gc:", err)
	}
	raw, err := os.ReadFile(filepath.Join(o.bundle, "config.json"))
	if err != nil {
		return exitSetup, err
	}
	var spec specs.Spec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return exitSetup, fmt.Errorf("%s: %w", filepath.Join(o.bundle, "config.json"), err)
	}
	// The descriptor socket, listening before the task exists.
	var ln *net.UnixListener
	if o.nfds > 0 {
		sock := filepath.Join(o.bundle, "fds", "s")
		ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
		if err != nil {
			return exitSetup, err
		}
		defer ln.Close()
		defer os.Remove(sock)
	}
	labels := map[string]string{labelKind: "1", labelOwner: owner()}
	opts := []containerd.NewContainerOpts{containerd.WithContainerLabels(labels)}
	var taskOpts []containerd.NewTaskOpts
	if o.image != "" {
		img, err := c.GetImage(ctx, o.image)
		if err != nil {
			return exitSetup, fmt.Errorf("image %s (import it into namespace fedmem first; no registry is contacted): %w", o.image, err)
		}
		if ok, _ := img.IsUnpacked(ctx, o.snapshotter); !ok {
			if err := img.Unpack(ctx, o.snapshotter); err != nil {
				return exitSetup, fmt.Errorf("unpack %s: %w", o.image, err)
			}
		}
		if o.snapshotter != "" {
			opts = append(opts, containerd.WithSnapshotter(o.snapshotter))
		}
		opts = append(opts, containerd.WithNewSnapshot(o.id, img))
	}
	opts = append(opts, containerd.WithSpec(&spec))
	ctr, err := c.NewContainer(ctx, o.id, opts...)
	if err != nil {
		return exitSetup, fmt.Errorf("create container: %w", err)
	}
	// Cleanup runs on a context of its own: the session's may be over.
	defer func() {
		if err := destroy(namespaces.WithNamespace(context.Background(), mustNS(ctx)), ctr); err != nil {
			fmt.Fprintln(os.Stderr, "fedmem-containerd: cleanup:", err)
		}
	}()
	if o.image == "" {
		// The root clone only once its container exists: another
		// helper's GC releases every clone whose container it cannot
		// find, and would take one made before it (concurrent sessions).
		if err := rootfs.PrivateDir(rootsDir); err != nil {
			return exitSetup, err
		}
		dir := filepath.Join(rootsDir, o.id)
		if err := os.WriteFile(dir+ownerSuffix, []byte(owner()), 0o600); err != nil {
			return exitSetup, err
		}
		// Released by destroy, deferred above, once the task is gone.
		if err := rootfs.CloneHostRoot(dir); err != nil {
			return exitSetup, err
		}
		// rbind keeps every sub-mount's read-only flag of the clone; nosuid and
		// nodev as the namespace and runc backends mount the agent's /.
		taskOpts = append(taskOpts, containerd.WithRootFS([]mount.Mount{{Type: "bind", Source: dir, Options: []string{"rbind", "ro", "nosuid", "nodev"}}}))
	}
	task, err := ctr.NewTask(ctx, cio.NewCreator(cio.WithStreams(os.Stdin, os.Stdout, os.Stderr), cio.WithFIFODir(filepath.Join(o.bundle, "fifo"))), taskOpts...)
	if err != nil {
		return exitSetup, fmt.Errorf("create task: %w", err)
	}
	helper.ReportPid(o.pidFd, int(task.Pid())) // the shim's pid namespace is ours
	exitCh, err := task.Wait(ctx)
	if err != nil {
		return exitSetup, err
	}
	if ln != nil {
		go handOver(ln, extra)
	}
	if o.control >= 0 {
		ctl := os.NewFile(uintptr(o.control), "control")
		go func() {
			n, _ := ctl.Read(make([]byte, 1))
			if n == 0 {
				// fedmem-run is gone (end of file, not a request): nobody
				// will remove the bundle after us.
				orphaned.Store(true)
			}
			_ = task.Kill(ctx, unix.SIGKILL)
		}()
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2, unix.SIGCONT)
	defer signal.Stop(sigs)
	go func() {
		for s := range sigs {
			_ = task.Kill(ctx, s.(syscall.Signal))
		}
	}()
	if err := task.Start(ctx); err != nil {
		return exitSetup, fmt.Errorf("start task: %w", err)
	}
	st := <-exitCh
	// Before the task's deletion removes the cgroup: which limits the
	// kernel enforced.
	if spec.Linux != nil && spec.Linux.CgroupsPath != "" {
		_ = cglimits.Write(o.bundle, cglimits.Hits(spec.Linux.CgroupsPath))
	}
	code, _, err := st.Result()
	if err != nil {
		return exitSetup, err
	}
	return int(code), nil
}

// handOver gives the first connection (fedmem's init, before any agent
// exists) the descriptors, then stops listening.
func handOver(ln *net.UnixListener, fds []int) {
	conn, err := ln.AcceptUnix()
	ln.Close()
	if err != nil {
		return
	}
	defer conn.Close()
	_, _, _ = conn.WriteMsgUnix([]byte{0}, unix.UnixRights(fds...), nil)
	for _, fd := range fds {
		unix.Close(fd)
	}
}

func mustNS(ctx context.Context) string {
	ns, _ := namespaces.Namespace(ctx)
	return ns
}

func importArchive(ctx context.Context, c *containerd.Client, archive, snapshotter string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	imgs, err := c.Import(ctx, f)
	if err != nil {
		return fmt.Errorf("import %s: %w", archive, err)
	}
	for _, im := range imgs {
		img := containerd.NewImage(c, im)
		if err := img.Unpack(ctx, snapshotter); err != nil {
			return fmt.Errorf("unpack %s: %w", im.Name, err)
		}
		fmt.Println(im.Name)
	}
	return nil
}
