//go:build !linux

package sandbox

import "github.com/fedmem/fedmem/mounts"

func containerBackend(name string, o BackendOptions) (Backend, error) {
	return nil, &Error{Code: ExitFedmemError, Stage: mounts.StageBackend, Msg: "the " + name + " backend needs Linux"}
}
