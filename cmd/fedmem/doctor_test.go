package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/test/testutil"
)

// doctorKeys are the JSON keys docs/doctor.md promises. They may only grow:
// a key removed or renamed fails this test.
var (
	doctorTopKeys    = []string{"ok", "runner", "probe", "checks"}
	doctorCheckKeys  = []string{"name", "status", "detail"}
	doctorProbeKeys  = []string{"kernel", "arch", "uid", "userns", "userns_unprivileged", "sysctls", "landlock_abi", "seccomp", "seccomp_mode", "cgroup", "container", "container_hints"}
	doctorCgroupKeys = []string{"version", "path", "controllers", "writable"}
	doctorCheckNames = []string{"fedmem-run", "userns", "userns_unprivileged", "apparmor_userns", "seccomp", "landlock", "cgroup", "container"}
	doctorVaultNames = []string{"vault", "vault_owner", "inbox", "gate_state"}
)

func requireKeys(t *testing.T, what string, m map[string]any, keys []string) {
	t.Helper()
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			t.Errorf("%s: key %q missing (have %v)", what, k, sortedKeys(m))
		}
	}
}

func sortedKeys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func TestDoctorJSON(t *testing.T) {
	bins := testutil.Binaries(t)
	// fedmem finds fedmem-run next to itself: make sure the pair sits together.
	if filepath.Dir(bins.Fedmem) != filepath.Dir(bins.FedmemRun) {
		t.Fatalf("fedmem (%s) and fedmem-run (%s) are not in one directory", bins.Fedmem, bins.FedmemRun)
	}
	dir := testutil.TempDir(t)
	v := filepath.Join(dir, "vault")
	if code, _, errOut := runFedmem("init", v); code != 0 {
		t.Fatalf("init: %s", errOut)
	}
	code, out, errOut := runBin(t, bins.Fedmem, "doctor", "--json", "--vault", v)
	var rep map[string]any
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s\nstderr %s", err, out, errOut)
	}
	requireKeys(t, "report", rep, doctorTopKeys)
	probe, _ := rep["probe"].(map[string]any)
	requireKeys(t, "probe", probe, doctorProbeKeys)
	cg, _ := probe["cgroup"].(map[string]any)
	requireKeys(t, "probe.cgroup", cg, doctorCgroupKeys)
	checks, _ := rep["checks"].([]any)
	status := map[string]string{}
	for _, c := range checks {
		m, _ := c.(map[string]any)
		requireKeys(t, "check", m, doctorCheckKeys)
		name, _ := m["name"].(string)
		status[name], _ = m["status"].(string)
		if s := status[name]; s != "ok" && s != "warn" && s != "fail" {
			t.Errorf("check %s: status %q", name, s)
		}
	}
	for _, n := range append(append([]string{}, doctorCheckNames...), doctorVaultNames...) {
		if _, ok := status[n]; !ok {
			t.Errorf("no check %q (have %v)", n, status)
		}
	}
	if rep["runner"] != bins.FedmemRun {
		t.Errorf("runner %v, want %s", rep["runner"], bins.FedmemRun)
	}
	// A vault created by the caller itself: the gate runs as the same user.
	if status["vault"] != "ok" || status["inbox"] != "ok" || status["vault_owner"] != "warn" {
		t.Errorf("vault checks: %v", status)
	}
	if _, err := os.Stat(filepath.Join(dir, ".vault.fedmem-gate")); err == nil && status["gate_state"] != "ok" {
		t.Errorf("gate state exists but gate_state is %s", status["gate_state"])
	}

	if os.Geteuid() != 0 {
		if os.Getenv("FEDMEM_REQUIRE_ROOT") == "1" {
			t.Fatal("FEDMEM_REQUIRE_ROOT=1 but not root")
		}
		t.Skip("the layer assertions are for the CI machine, as root")
	}
	// The CI machine (root) offers every layer fedmem needs.
	if probe["userns"] != true || probe["seccomp"] != true {
		t.Errorf("probe as root: userns %v, seccomp %v (%v, %v)", probe["userns"], probe["seccomp"], probe["userns_error"], probe["seccomp_error"])
	}
	if abi, _ := probe["landlock_abi"].(float64); abi < 1 {
		t.Errorf("probe: landlock_abi %v", probe["landlock_abi"])
	}
	if rep["ok"] != true || code != 0 {
		t.Errorf("doctor: ok %v, exit %d; checks %v", rep["ok"], code, status)
	}
}

func TestDoctorFailsOnBadVault(t *testing.T) {
	bins := testutil.Binaries(t)
	missing := filepath.Join(testutil.TempDir(t), "nothing-here")
	code, out, _ := runBin(t, bins.Fedmem, "doctor", "--json", "--vault", missing)
	var rep doctorReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, out)
	}
	var vaultCheck *doctorCheck
	for i := range rep.Checks {
		if rep.Checks[i].Name == "vault" {
			vaultCheck = &rep.Checks[i]
		}
	}
	if code != 1 || rep.OK || vaultCheck == nil || vaultCheck.Status != "fail" || !strings.Contains(vaultCheck.Detail, "no such file or directory") || vaultCheck.Fix != "fedmem init "+missing {
		t.Errorf("doctor with a missing vault: exit %d, ok %v, vault check %+v", code, rep.OK, vaultCheck)
	}
	// Human output: a table with the failed check and its fix.
	code, out, _ = runBin(t, bins.Fedmem, "doctor", "--vault", missing)
	if code != 1 || !strings.Contains(out, "vault") || !strings.Contains(out, "FAIL") || !strings.Contains(out, "fix: fedmem init "+missing) {
		t.Errorf("doctor table: exit %d\n%s", code, out)
	}
}

// TestDoctorWithoutRunner: a fedmem without its fedmem-run beside it (and
// none on $PATH) fails the fedmem-run check instead of guessing.
func TestDoctorWithoutRunner(t *testing.T) {
	bins := testutil.Binaries(t)
	dir := testutil.TempDir(t)
	lone := filepath.Join(dir, "fedmem")
	b, err := os.ReadFile(bins.Fedmem)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lone, b, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	code, out, _ := runBin(t, lone, "doctor", "--json")
	var rep doctorReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, out)
	}
	if code != 1 || rep.OK || len(rep.Checks) != 1 || rep.Checks[0].Name != "fedmem-run" || rep.Checks[0].Status != "fail" || !strings.Contains(rep.Checks[0].Detail, "fedmem-run not found") {
		t.Errorf("doctor without fedmem-run: exit %d, %+v", code, rep)
	}
}
