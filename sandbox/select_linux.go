package sandbox

func containerBackend(name string, o BackendOptions) (Backend, error) {
	if name == BackendRunc {
		return Runc{}, nil
	}
	return Containerd{Address: o.ContainerdAddress, Image: o.Image}, nil
}
