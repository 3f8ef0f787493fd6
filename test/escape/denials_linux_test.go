package escape

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// denialProbe runs inside the sandbox: two refused system calls (mount,
// unshare of a user namespace) through libc, and a write into the vault.
const denialProbe = `
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
r = libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)
print("MOUNT", r, ctypes.get_errno())
r = libc.unshare(0x10000000)  # CLONE_NEWUSER
print("UNSHARE", r, ctypes.get_errno())
try:
    open(os.path.join(os.environ["FEDMEM_VAULT"], "hostile.md"), "w").write("x")
    print("VAULTWRITE ok")
except OSError as e:
    print("VAULTWRITE", e.errno)
`

// TestDenialEvents: refused system calls reach --events as "denied" events
// naming the system call, the seccomp rule, the errno the agent got and a
// hint, and the session report counts them by kind and by system call —
// as root (the agent on another uid) and as a user. The calls still fail
// with EPERM (the listener only reports; the answer is the filter's).
func TestDenialEvents(t *testing.T) {
	for _, l := range []layout{{name: "beside/root"}, {name: "beside/user", gateOwned: true, user: true}} {
		t.Run(l.name, func(t *testing.T) {
			e := setup(t, l)
			evs := filepath.Join(e.outDir, "events.jsonl")
			r := e.run(t, []string{"--events", evs}, "python3", "-c", denialProbe)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			out := string(r.stdout)
			for _, want := range []string{"MOUNT -1 1\n", "UNSHARE -1 1\n", "VAULTWRITE 30\n"} { // EPERM, EPERM, EROFS
				if !strings.Contains(out, want) {
					t.Errorf("probe: %q, want %q", out, want)
				}
			}
			f, err := os.Open(evs)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			seen := map[string]map[string]any{}
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				var m map[string]any
				if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
					t.Fatalf("event line %q: %v", sc.Bytes(), err)
				}
				if m["event"] == "denied" {
					sys, _ := m["syscall"].(string)
					seen[sys] = m
				}
			}
			for sys, rule := range map[string]string{"mount": "mount", "unshare": "unshare-namespaces"} {
				m := seen[sys]
				if m == nil {
					t.Errorf("no denied event for %s; denied events: %v", sys, seen)
					continue
				}
				if m["kind"] != "syscall" || m["rule"] != rule || m["errno"] != "EPERM" || !strings.Contains(m["hint"].(string), "profile") {
					t.Errorf("%s: %v, want kind syscall, rule %s, errno EPERM and a hint", sys, m, rule)
				}
			}
			d, _ := r.report["denials"].(map[string]any)
			byKind, _ := d["by_kind"].(map[string]any)
			bySys, _ := d["by_syscall"].(map[string]any)
			if d == nil || byKind["syscall"].(float64) < 2 || bySys["mount"] != 1.0 || bySys["unshare"] != 1.0 {
				t.Errorf("report denials: %v", r.report["denials"])
			}
			if !strings.Contains(string(r.stderr), "refused by the sandbox") {
				t.Errorf("stderr does not mention the refusals:\n%s", r.stderr)
			}
		})
	}
}
