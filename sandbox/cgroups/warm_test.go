package cgroups

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestOwnV1: the caller's cgroup in the v1 hierarchy of a controller,
// from /proc/self/cgroup's "N:controllers:path" lines (a joint cpu,cpuacct
// hierarchy too); none for the v2 line or a controller no line names.
func TestOwnV1(t *testing.T) {
	h := Host{Self: "12:pids:/user.slice/user-0.slice\n4:cpu,cpuacct:/a/b\n3:memory:/\n0::/init.scope\n"}
	for ctrl, want := range map[string]string{"pids": "/user.slice/user-0.slice", "cpu": "/a/b", "cpuacct": "/a/b", "memory": "/", "freezer": "", "": ""} {
		if got := h.ownV1(ctrl); got != want {
			t.Errorf("ownV1(%q) = %q, want %q", ctrl, got, want)
		}
	}
}

// TestWarmAttachMovesNothing: the warm-up writes this process's pid into
// the cgroup.procs of the cgroup it is in already (v1 memory here, the
// first controller the limits want) and nowhere else; with no v1
// controller wanted there is nothing to warm.
func TestWarmAttachMovesNothing(t *testing.T) {
	root := tree(t, map[string]string{
		"memory/cgroup.procs":            "",
		"memory/outer/cgroup.procs":      "",
		"pids/cgroup.procs":              "",
		"unified/cgroup.controllers":     "",
		"unified/cgroup.subtree_control": "",
	})
	h := Host{Root: root, Self: "4:memory:/outer\n8:pids:/\n0::/\n", Euid: 0}
	w := h.WarmAttach(Limits{Memory: 1 << 30, Pids: 100})
	if w == nil {
		t.Fatal("no warm-up with a v1 memory controller wanted")
	}
	want := strconv.Itoa(os.Getpid())
	<-w.done
	if b, _ := os.ReadFile(filepath.Join(root, "memory/outer/cgroup.procs")); string(b) != want {
		t.Errorf("memory/outer/cgroup.procs = %q, want this process %s (the cgroup it is in)", b, want)
	}
	for _, other := range []string{"memory/cgroup.procs", "pids/cgroup.procs"} {
		if b, _ := os.ReadFile(filepath.Join(root, other)); len(b) != 0 {
			t.Errorf("%s written: %q", other, b)
		}
	}
	if w := h.WarmAttach(Limits{}); w != nil {
		t.Error("a warm-up with no controller wanted")
	}
	first := w.done
	w.Again() // the first is over: one more, to the same file
	if w.done == first {
		t.Error("Again after a finished warm-up started none")
	}
	<-w.done
	if b, _ := os.ReadFile(filepath.Join(root, "memory/outer/cgroup.procs")); string(b) != want {
		t.Errorf("after Again, memory/outer/cgroup.procs = %q, want %s", b, want)
	}
	var none *Warm
	none.Again() // a nil Warm does nothing
}
