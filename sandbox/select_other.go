//go:build !linux

package sandbox

func containerBackend(name string, o BackendOptions) (Backend, error) {
	return nil, &Error{Code: ExitFedmemError, Stage: "backend", Msg: "the " + name + " backend needs Linux"}
}
