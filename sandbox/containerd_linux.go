package sandbox

import (
	"context"
	"os"
	"os/exec"

	"github.com/fedmem/fedmem/mounts"
	ocihelper "github.com/fedmem/fedmem/sandbox/oci/helper"
)

// Containerd is the containerd backend: the same OCI spec, run by a real
// containerd daemon through its Go client in the cmd/fedmem-containerd
// helper (the client pulls in gRPC and net/http, which fedmem-run must not
// link; test/boundary), which fedmem-run execs like fedmem-runc.
type Containerd struct {
	// Address is containerd's socket ("": $CONTAINERD_ADDRESS, else
	// /run/containerd/containerd.sock).
	Address string
	// Image runs the agent in this image of the local content store
	// (namespace fedmem) instead of the host's / read-only.
	Image string
	// Helper is fedmem-containerd's path; "": beside fedmem-run, then PATH.
	Helper string
	// State holds the bundles handed to the helper; "":
	// /run/fedmem/containerd.
	State string
}

// Name implements Backend.
func (Containerd) Name() string { return "containerd" }

// ContainerdNamespace is the containerd namespace fedmem's containers,
// tasks, snapshots and images live in.
const ContainerdNamespace = "fedmem"

// Run implements Backend.
func (c Containerd) Run(ctx context.Context, spec *Spec) (*Result, error) {
	helper, err := helperPath(c.Helper, "fedmem-containerd")
	if err != nil {
		return nil, &Error{Code: ExitFedmemError, Stage: mounts.StageBackend, Msg: "containerd backend: fedmem-containerd not found beside fedmem-run nor in PATH: " + err.Error()}
	}
	addr := c.address()
	state := c.State
	if state == "" {
		state = "/run/fedmem/containerd"
	}
	rt := containerRuntime{
		enforced: c.enforced(),
		name:     "containerd",
		fdSocket: true,
		rootfs:   "rootfs",
		image:    c.Image != "",
		command: func(bundle, id string, nfds, control, pidFd int) *exec.Cmd {
			args := append([]string{"run", "--address", addr, "--namespace", ContainerdNamespace}, ocihelper.RunFlags{Bundle: bundle, ID: id, FDs: nfds, Control: control, PidFd: pidFd}.Args()...)
			if c.Image != "" {
				args = append(args, "--image", c.Image)
			}
			cmd := exec.Command(helper, args...)
			cmd.Env = []string{"GOMAXPROCS=2"}
			return cmd
		},
	}
	return runContainer(ctx, spec, rt, state)
}

// address is the daemon's socket: Address, else $CONTAINERD_ADDRESS, else
// /run/containerd/containerd.sock.
func (c Containerd) address() string {
	if c.Address != "" {
		return c.Address
	}
	if a := os.Getenv("CONTAINERD_ADDRESS"); a != "" {
		return a
	}
	return "/run/containerd/containerd.sock"
}
