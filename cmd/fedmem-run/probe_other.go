//go:build !linux

package main

import "errors"

func runProbe() *Probe {
	return &Probe{Sysctls: map[string]string{}, ContainerHints: []string{}, Cgroup: Cgroup{Version: "none", Controllers: []string{}}}
}

func tryUserns() error { return errors.New("user namespaces: only on Linux") }
