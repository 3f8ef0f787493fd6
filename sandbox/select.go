package sandbox

import (
	"fmt"
	"os"

	"github.com/fedmem/fedmem/mounts"
)

// Backend names, for --backend and a profile's backend:.
const (
	BackendNamespace  = "namespace"
	BackendRunc       = "runc"
	BackendContainerd = "containerd"
)

// BackendOptions are the container backends' settings.
type BackendOptions struct {
	// ContainerdAddress is containerd's socket ("": $CONTAINERD_ADDRESS,
	// else /run/containerd/containerd.sock).
	ContainerdAddress string
	// Image, with containerd, is the image the agent runs in instead of
	// the host's / read-only (from the local content store).
	Image string
}

// NewBackend returns the backend called name ("" is the namespace
// backend).
func NewBackend(name string, o BackendOptions) (Backend, error) {
	if o.Image != "" && name != BackendContainerd {
		return nil, &Error{Code: ExitFedmemError, Stage: mounts.StageBackend, Msg: fmt.Sprintf("--image needs --backend containerd (backend %q)", name)}
	}
	switch name {
	case "", BackendNamespace:
		return Namespace{}, nil
	case BackendRunc, BackendContainerd:
		return containerBackend(name, o)
	}
	return nil, &Error{Code: ExitFedmemError, Stage: mounts.StageBackend, Msg: fmt.Sprintf("unknown backend %q (namespace, runc or containerd)", name)}
}

// CheckCaller refuses, before a session exists (no inbox folder, no
// session record), a caller backend b cannot serve: the container backends
// need a root caller. Rootless runc and rootless containerd are not
// supported (docs/backends.md); an unprivileged caller uses namespace.
func CheckCaller(b Backend) error {
	switch n := b.Name(); n {
	case BackendRunc, BackendContainerd:
		if uid := os.Geteuid(); uid != 0 {
			return &Error{Code: ExitFedmemError, Stage: mounts.StageBackend, Msg: fmt.Sprintf("the %s backend needs a root caller (this one is uid %d): rootless runc and containerd are not supported; use --backend namespace", n, uid)}
		}
	}
	return nil
}

// CheckPlan refuses, before anything of the session exists, a plan the
// backend b cannot build: a proposed workdir (profile `workdir: propose`)
// is an overlay only the namespace backend mounts; the container backends
// would bind the real workdir writable, so they refuse it (exit 125).
func CheckPlan(b Backend, pl *mounts.Plan) error {
	if pl == nil || pl.ProposedWorkdir() == nil {
		return nil
	}
	if n := b.Name(); n != BackendNamespace {
		return &Error{Code: ExitFedmemError, Stage: mounts.StageBackend, Msg: fmt.Sprintf("the %s backend cannot build the profile's `workdir: propose` (an overlay the namespace backend mounts): use --backend namespace, or a profile with workdir: direct", n)}
	}
	return nil
}
