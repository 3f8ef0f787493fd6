//go:build linux && cgo

package runc

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/specconv"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"github.com/sirupsen/logrus"
	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/sandbox/oci/cglimits"
	"github.com/fedmem/fedmem/sandbox/oci/helper"
	"github.com/fedmem/fedmem/sandbox/oci/rootfs"

	// nsexec: the C half of container creation (setns/clone before the
	// Go runtime starts in "fedmem-runc init").
	_ "github.com/opencontainers/runc/libcontainer/nsenter"

	// cgroup device rules (v1 devices controller, v2 eBPF).
	_ "github.com/opencontainers/cgroups/devices"
)

// exitSetup is the helper's exit code when it fails before the container's
// process runs (fedmem-run's 125).
const exitSetup = 125

// Main is fedmem-runc: `init` (libcontainer's re-exec), `run` or `gc`.
func Main(args []string) int {
	if len(args) > 1 && args[1] == "init" {
		libcontainer.Init() // never returns
	}
	if len(args) > 1 && args[1] == "version" {
		// fedmem doctor: which libcontainer this helper was built with.
		fmt.Printf("libcontainer %s (runc module, linked into fedmem-runc; cgroupfs manager)\n", helper.ModuleVersion("github.com/opencontainers/runc"))
		return 0
	}
	logrus.SetOutput(os.Stderr)
	logrus.SetLevel(logrus.WarnLevel)
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: fedmem-runc run|gc|version --state DIR [--bundle DIR --id ID --fds N]")
		return 2
	}
	fs := flag.NewFlagSet("fedmem-runc "+args[1], flag.ContinueOnError)
	state := fs.String("state", "/run/fedmem/runc", "libcontainer state root")
	var rf helper.RunFlags
	rf.Register(fs)
	if err := fs.Parse(args[2:]); err != nil {
		return 2
	}
	switch args[1] {
	case "gc":
		n, err := GC(*state)
		fmt.Fprintf(os.Stderr, "fedmem-runc: removed %d stale containers\n", n)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fedmem-runc:", err)
			return 1
		}
		return 0
	case "run":
		code, err := run(*state, rf.Bundle, rf.ID, rf.FDs, rf.Control, rf.PidFd)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fedmem-runc:", err)
		}
		return code
	}
	fmt.Fprintf(os.Stderr, "fedmem-runc: unknown command %q\n", args[1])
	return 2
}

// GC destroys every container in the state root whose process is gone
// (left by a helper that was killed): its cgroup and state go with it.
func GC(state string) (int, error) {
	ents, err := os.ReadDir(state)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	} else if err != nil {
		return 0, err
	}
	n := 0
	var errs []error
	for _, e := range ents {
		c, err := libcontainer.Load(state, e.Name())
		if err != nil {
			continue
		}
		st, err := c.Status()
		if err != nil || st != libcontainer.Stopped {
			continue
		}
		if err := c.Destroy(); err != nil {
			errs = append(errs, fmt.Errorf("destroy %s: %w", e.Name(), err))
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

func run(state, bundle, id string, nfds, control, pidFd int) (int, error) {
	if bundle == "" || id == "" {
		return exitSetup, errors.New("run needs --bundle and --id")
	}
	var orphaned atomic.Bool
	defer func() {
		if orphaned.Load() {
			rootfs.RemoveBundle(bundle)
		}
	}()
	if _, err := GC(state); err != nil {
		fmt.Fprintln(os.Stderr, "fedmem-runc: gc:", err)
	}
	// Take the descriptors before anything else can open one over them.
	extra := make([]*os.File, 0, nfds)
	for i := 0; i < nfds; i++ {
		extra = append(extra, os.NewFile(uintptr(3+i), fmt.Sprintf("fd%d", 3+i)))
	}
	// Inherited without O_CLOEXEC: none may reach runc's init (and the
	// agent) but through ExtraFiles, which places them again.
	_ = unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	raw, err := os.ReadFile(filepath.Join(bundle, "config.json"))
	if err != nil {
		return exitSetup, err
	}
	var spec specs.Spec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return exitSetup, fmt.Errorf("%s: %w", filepath.Join(bundle, "config.json"), err)
	}
	if spec.Root == nil || spec.Process == nil {
		return exitSetup, errors.New("config.json: no root or process")
	}
	if err := os.Chdir(bundle); err != nil {
		return exitSetup, err
	}
	if spec.Root.Path == helper.HostRoot {
		dir := filepath.Join(bundle, "rootfs")
		if err := makeRoot(dir); err != nil {
			return exitSetup, err
		}
		// Detached before anything removes the bundle it sits in.
		defer rootfs.Release(dir)
		spec.Root.Path = dir
	}
	cfg, err := specconv.CreateLibcontainerConfig(&specconv.CreateOpts{CgroupName: id, Spec: &spec})
	if err != nil {
		return exitSetup, fmt.Errorf("spec: %w", err)
	}
	// The container's init dies with this helper, and this helper with
	// fedmem-run (its own parent death signal).
	cfg.ParentDeathSignal = int(unix.SIGKILL)
	c, err := libcontainer.Create(state, id, cfg)
	if err != nil {
		return exitSetup, fmt.Errorf("create: %w", err)
	}
	defer func() {
		if err := c.Destroy(); err != nil {
			fmt.Fprintln(os.Stderr, "fedmem-runc: destroy:", err)
		}
	}()
	p := &libcontainer.Process{
		Args: spec.Process.Args, Env: spec.Process.Env, Cwd: spec.Process.Cwd,
		UID: int(spec.Process.User.UID), GID: int(spec.Process.User.GID),
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		ExtraFiles: extra, Init: true,
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2, unix.SIGCONT)
	defer signal.Stop(sigs)
	if err := c.Run(p); err != nil {
		return exitSetup, fmt.Errorf("start: %w", err)
	}
	for _, f := range extra {
		f.Close() // the container's process holds them now
	}
	if pid, err := p.Pid(); err == nil {
		helper.ReportPid(pidFd, pid)
	}
	go func() {
		for s := range sigs {
			_ = p.Signal(s)
		}
	}()
	if control >= 0 {
		// fedmem-run holds the other end: when it asks, or dies (even by
		// SIGKILL), the container is killed and destroyed below.
		ctl := os.NewFile(uintptr(control), "control")
		go func() {
			n, _ := ctl.Read(make([]byte, 1))
			if n == 0 {
				// fedmem-run is gone (end of file, not a request): nobody
				// will remove the bundle after us.
				orphaned.Store(true)
			}
			_ = p.Signal(unix.SIGKILL)
		}()
	}
	ps, err := p.Wait()
	if ps == nil {
		return exitSetup, fmt.Errorf("wait: %w", err)
	}
	// Before Destroy removes the cgroup: which limits the kernel enforced.
	if spec.Linux != nil && spec.Linux.CgroupsPath != "" {
		_ = cglimits.Write(bundle, cglimits.Hits(spec.Linux.CgroupsPath))
	}
	ws, _ := ps.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return ws.ExitStatus(), nil
}

// makeRoot makes the root in the helper's own mount namespace
// (fedmem-run starts it with CLONE_NEWNS), made a slave first, so nothing
// here reaches the host's and the clone dies with the helper.
func makeRoot(dir string) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("make / rslave (is fedmem-runc in its own mount namespace?): %w", err)
	}
	return rootfs.CloneHostRoot(dir)
}
