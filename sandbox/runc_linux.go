package sandbox

import (
	"context"
	"os/exec"
	"syscall"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/sandbox/oci"
	ocihelper "github.com/fedmem/fedmem/sandbox/oci/helper"
)

// Runc is the runc backend: the sandbox/oci translation of the plan run by
// runc's libcontainer, as a library, in the cmd/fedmem-runc helper (cgo:
// libcontainer's nsexec), which fedmem-run (CGO_ENABLED=0) execs. The
// helper clones the host's / recursively read-only as the root; fedmem's
// own init is the container's process and applies the same layers as in
// the namespace backend.
type Runc struct {
	// Helper is fedmem-runc's path; "": beside fedmem-run, then PATH.
	Helper string
	// State is where bundles and libcontainer's state live; "":
	// /run/fedmem/runc.
	State string
}

// Name implements Backend.
func (Runc) Name() string { return "runc" }

// Run implements Backend.
func (r Runc) Run(ctx context.Context, spec *Spec) (*Result, error) {
	helper, err := helperPath(r.Helper, "fedmem-runc")
	if err != nil {
		return nil, &Error{Code: ExitFedmemError, Stage: mounts.StageBackend, Msg: "runc backend: fedmem-runc not found beside fedmem-run nor in PATH: " + err.Error()}
	}
	state := r.State
	if state == "" {
		state = "/run/fedmem/runc"
	}
	rt := containerRuntime{
		enforced: r.enforced(),
		name:     "runc",
		rootfs:   oci.HostRoot,
		command: func(bundle, id string, nfds, control, pidFd int) *exec.Cmd {
			args := append([]string{"run", "--state", state + "/containers"}, ocihelper.RunFlags{Bundle: bundle, ID: id, FDs: nfds, Control: control, PidFd: pidFd}.Args()...)
			cmd := exec.Command(helper, args...)
			cmd.Env = []string{"GOMAXPROCS=2"}
			cmd.SysProcAttr = runcHelperAttr()
			return cmd
		},
	}
	return runContainer(ctx, spec, rt, state)
}

// runcHelperAttr starts the helper in a mount namespace of its own: the
// read-only clone of / it makes for the root never appears in the host's,
// and goes away with it, even after a SIGKILL.
func runcHelperAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
}
