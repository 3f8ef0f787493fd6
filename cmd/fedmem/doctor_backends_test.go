package main

import (
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/test/testutil"
)

// doctorChecks runs `fedmem doctor --json` with args and returns its
// checks by name.
func doctorChecks(t *testing.T, bin string, args ...string) map[string]doctorCheck {
	t.Helper()
	_, out, errOut := runBin(t, bin, append([]string{"doctor", "--json"}, args...)...)
	var rep doctorReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s\nstderr %s", err, out, errOut)
	}
	m := map[string]doctorCheck{}
	for _, c := range rep.Checks {
		m[c.Name] = c
	}
	return m
}

// TestDoctorBackends: doctor names each backend and what enforces it, asks
// fedmem-runc which libcontainer it links and the containerd daemon for its
// version; a socket nobody listens on, or something that is not
// containerd, is a warning that says so.
func TestDoctorBackends(t *testing.T) {
	testutil.RequireRoot(t)
	bins := testutil.Binaries(t)
	sock := testutil.Containerd(t)
	testutil.RequireBackendTools(t, "runc", bins.FedmemRun, sock)
	testutil.RequireBackendTools(t, "containerd", bins.FedmemRun, sock)

	c := doctorChecks(t, bins.Fedmem, "--containerd-address", sock)
	for name, want := range map[string][]string{
		"backend namespace":  {"the default", "Landlock"},
		"backend runc":       {"libcontainer v", "cgroup limits (pids, memory, cpu) by libcontainer", "fedmem's init inside"},
		"backend containerd": {"containerd ", "answering at " + sock, "runc version", "fedmem's init inside"},
	} {
		got, ok := c[name]
		if !ok {
			t.Errorf("no check %q", name)
			continue
		}
		if got.Status != statusOK {
			t.Errorf("%s: %s %s (fix: %s)", name, got.Status, got.Detail, got.Fix)
		}
		for _, w := range want {
			if !strings.Contains(got.Detail, w) {
				t.Errorf("%s: %q does not say %q", name, got.Detail, w)
			}
		}
	}

	dir := testutil.TempDir(t)
	absent := filepath.Join(dir, "absent.sock")
	if got := doctorChecks(t, bins.Fedmem, "--containerd-address", absent)["backend containerd"]; got.Status != statusWarn || !strings.Contains(got.Detail, "no containerd socket at "+absent) {
		t.Errorf("absent daemon: %s %q", got.Status, got.Detail)
	}
	// A socket that accepts and hangs up: not containerd.
	impostor := filepath.Join(dir, "impostor.sock")
	ln, err := net.Listen("unix", impostor)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
	if got := doctorChecks(t, bins.Fedmem, "--containerd-address", impostor)["backend containerd"]; got.Status != statusWarn || !strings.Contains(got.Detail, "does not answer") {
		t.Errorf("impostor daemon: %s %q", got.Status, got.Detail)
	}
}
