// Package cglimits reads, from a container's cgroup (v1 or v2), which of
// its limits the kernel enforced: the runtime helpers call Hits after the
// container's process ended and before its cgroup goes, and hand the names
// to fedmem-run (the session report's limits_hit).
package cglimits

import (
	"os"
	"path/filepath"
	"strings"
)

// Root is where the cgroup hierarchies are mounted.
var Root = "/sys/fs/cgroup"

// Hits names the limits ("pids", "memory") enforced in the cgroup at path
// (the OCI linux.cgroupsPath, e.g. /fedmem/<id>).
func Hits(path string) []string {
	var out []string
	if counter(filepath.Join(Root, "pids", path, "pids.events"), "max") ||
		counter(filepath.Join(Root, path, "pids.events"), "max") {
		out = append(out, "pids")
	}
	mem := false
	for _, f := range []string{"memory.failcnt", "memory.memsw.failcnt"} {
		if b, err := os.ReadFile(filepath.Join(Root, "memory", path, f)); err == nil && strings.TrimSpace(string(b)) != "0" {
			mem = true
		}
	}
	if counter(filepath.Join(Root, "memory", path, "memory.oom_control"), "oom_kill") ||
		counter(filepath.Join(Root, path, "memory.events"), "oom_kill") ||
		counter(filepath.Join(Root, path, "memory.events"), "max") {
		mem = true
	}
	if mem {
		out = append(out, "memory")
	}
	return out
}

// counter reports whether the "key N" line of a cgroup events file has
// N > 0.
func counter(file, key string) bool {
	b, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 2 && f[0] == key && f[1] != "0" {
			return true
		}
	}
	return false
}

// Write records hits in the bundle for fedmem-run (one name a line).
func Write(bundle string, hits []string) error {
	if len(hits) == 0 {
		return nil
	}
	return os.WriteFile(filepath.Join(bundle, "limits_hit"), []byte(strings.Join(hits, "\n")+"\n"), 0o600)
}
