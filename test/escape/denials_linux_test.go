package escape

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/test/testutil"
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
			seen := map[string]map[string]any{}
			for _, m := range eventsOf(t, evs, "denied") {
				sys, _ := m["syscall"].(string)
				seen[sys] = m
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

// fsProbe runs inside the sandbox: writes the sandbox refuses (the vault,
// the read-only root) and writes it allows (the session inbox, /tmp). Each
// line is NAME then "ok" or the errno the agent got.
const fsProbe = `
import os, sys
V, I = os.environ["FEDMEM_VAULT"], os.environ["FEDMEM_INBOX"]
note = os.path.join(V, sys.argv[1])
agent_md = os.path.join(V, "AGENT.md")
def t(name, f):
    try:
        f()
        print(name, "ok")
    except OSError as e:
        print(name, e.errno)
t("VAULTWRITE", lambda: open(note, "w").write("x"))
t("ROOTCREATE", lambda: open("/fedmem-denial-probe", "w"))
t("VAULTMKDIR", lambda: os.mkdir(os.path.join(V, "newdir")))
t("VAULTRENAME", lambda: os.rename(note, agent_md))
t("INBOXWRITE", lambda: open(os.path.join(I, "draft.md"), "w").write("x"))
t("TMPWRITE", lambda: open("/tmp/fedmem-denial-probe", "w").write("x"))
os.chdir(V)
t("RELWRITE", lambda: open("relative.md", "x"))
`

// eventsOf returns the events named event ("denied", "network",
// "persistence"…) from the --events file at path, failing on a line that
// is not JSON.
func eventsOf(t *testing.T, path, event string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// A running session may be writing its next line: each line is one
	// write(2), but a reader can see a large one (the "started" event,
	// several KiB) part-way. Only lines already ended by '\n' are read.
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[:i+1]
	} else {
		b = nil
	}
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("event line %q: %v", sc.Bytes(), err)
		}
		if m["event"] == event {
			out = append(out, m)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("events %s: %v", path, err)
	}
	return out
}

// TestFilesystemDenialEvents: a write the sandbox refuses — into the vault
// (read-only bind mount), under the read-only root — reaches --events as a
// "denied" event of kind filesystem naming the path, the operation, the
// errno and a hint saying how to write there instead; the write still
// fails; the report counts it by kind. Writes into the session inbox and
// /tmp leave no denial. As root (the agent on another uid), with
// --agent-user, and as an unprivileged user.
func TestFilesystemDenialEvents(t *testing.T) {
	for _, c := range []struct {
		l     layout
		extra []string
	}{
		{l: layout{name: "beside/root"}},
		{l: layout{name: "beside/root"}, extra: []string{"--agent-user", "64001:64001"}},
		{l: layout{name: "beside/user", gateOwned: true, user: true}},
	} {
		name := c.l.name
		if c.extra != nil {
			name += "/agent-user"
		}
		t.Run(name, func(t *testing.T) {
			e := setup(t, c.l)
			if c.extra != nil {
				// The explicit agent uid must reach the inbox.
				if err := os.Chmod(filepath.Join(e.vault.Dir, "90-inbox"), 0o1777); err != nil {
					t.Fatal(err)
				}
			}
			before, err := testutil.Take(e.vault.Dir)
			if err != nil {
				t.Fatal(err)
			}
			evs := filepath.Join(e.outDir, "events.jsonl")
			r := e.run(t, append([]string{"--events", evs}, c.extra...), "python3", "-c", fsProbe, e.vault.Note)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			got := map[string]string{}
			for _, l := range strings.Split(string(r.stdout), "\n") {
				if k, v, ok := strings.Cut(l, " "); ok {
					got[k] = v
				}
			}
			// The writes still fail (EROFS), the allowed ones work.
			for k, want := range map[string]string{"VAULTWRITE": "30", "ROOTCREATE": "30", "VAULTMKDIR": "30", "VAULTRENAME": "30", "RELWRITE": "30", "INBOXWRITE": "ok", "TMPWRITE": "ok"} {
				if got[k] != want {
					t.Errorf("probe %s: %q, want %q\n%s", k, got[k], want, r.stdout)
				}
			}
			after, err := testutil.Take(e.vault.Dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range testutil.Diff(before, after, inInbox) {
				t.Errorf("vault changed: %s", p)
			}
			fs := map[string]map[string]any{} // by op and path
			for _, m := range eventsOf(t, evs, "denied") {
				if m["kind"] != "filesystem" {
					continue
				}
				p, _ := m["path"].(string)
				if strings.Contains(p, "/90-inbox/") || strings.HasPrefix(p, "/tmp/") {
					t.Errorf("an allowed write was reported as a denial: %v", m)
				}
				fs[m["op"].(string)+" "+p] = m
			}
			note := filepath.Join(e.vault.Dir, e.vault.Note)
			for _, w := range []struct{ path, op, hint string }{
				{note, "open", "FEDMEM_INBOX"},
				{"/fedmem-denial-probe", "open", "writable:"},
				{filepath.Join(e.vault.Dir, "newdir"), "mkdir", "FEDMEM_INBOX"},
				{filepath.Join(e.vault.Dir, "relative.md"), "open", "FEDMEM_INBOX"},
			} {
				m := fs[w.op+" "+w.path]
				if m == nil {
					t.Errorf("no filesystem denial for %s; got %v", w.path, fs)
					continue
				}
				h, _ := m["hint"].(string)
				if m["op"] != w.op || m["errno"] != "EROFS" || !strings.Contains(h, w.hint) {
					t.Errorf("%s: %v, want op %s, errno EROFS, a hint naming %s", w.path, m, w.op, w.hint)
				}
			}
			var renamed bool
			for _, p := range []string{note, filepath.Join(e.vault.Dir, "AGENT.md")} {
				if m := fs["rename "+p]; m != nil && m["errno"] == "EROFS" && strings.Contains(m["hint"].(string), "FEDMEM_INBOX") {
					renamed = true
				}
			}
			if !renamed {
				t.Errorf("no filesystem denial for the rename over AGENT.md; got %v", fs)
			}
			if t.Failed() {
				b, _ := os.ReadFile(evs)
				t.Logf("events:\n%s", b)
			}
			d, _ := r.report["denials"].(map[string]any)
			byKind, _ := d["by_kind"].(map[string]any)
			byOp, _ := d["by_op"].(map[string]any)
			if n, _ := byKind["filesystem"].(float64); n < 5 || byOp["mkdir"] != 1.0 || byOp["rename"] != 1.0 {
				t.Errorf("report denials: %v, want at least 5 of kind filesystem", r.report["denials"])
			}
		})
	}
}

// racingProbe: a hostile agent opens a path for writing while another
// thread keeps swapping the bytes of that path between a /tmp file and a
// vault file. What the listener reads may differ from what the kernel
// resolves; the policy must not: no write ever lands in the vault.
const racingProbe = `
import ctypes, os, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
V = os.environ["FEDMEM_VAULT"]
a = b"/tmp/race-a.md".ljust(200, b"\0")
b = os.path.join(V, "race.md").encode().ljust(200, b"\0")
buf = ctypes.create_string_buffer(a, 200)
stop = False
def flip():
    while not stop:
        ctypes.memmove(buf, b, 200)
        ctypes.memmove(buf, a, 200)
th = threading.Thread(target=flip)
th.start()
res = {}
for i in range(int(sys.argv[1])):
    fd = libc.open(buf, os.O_WRONLY | os.O_CREAT, 0o644)
    if fd >= 0:
        os.close(fd)
        res["ok"] = res.get("ok", 0) + 1
    else:
        e = ctypes.get_errno()
        res[e] = res.get(e, 0) + 1
stop = True
th.join()
print("RESULTS", res)
print("VAULTFILE", os.path.exists(os.path.join(V, "race.md")))
`

// TestFilesystemDenialRace: swapping the path under the listener's feet
// changes at most what the report says, never what the kernel allows.
func TestFilesystemDenialRace(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	before, err := testutil.Take(e.vault.Dir)
	if err != nil {
		t.Fatal(err)
	}
	evs := filepath.Join(e.outDir, "events.jsonl")
	r := e.run(t, []string{"--events", evs}, "python3", "-c", racingProbe, "3000")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("%s", r.stdout)
	if !strings.Contains(string(r.stdout), "VAULTFILE False") {
		t.Errorf("a racing agent wrote into the vault:\n%s", r.stdout)
	}
	// The vault attempts that lost the race failed with EROFS (30): the
	// mount refused them, not the listener.
	if !strings.Contains(string(r.stdout), "30: ") {
		t.Errorf("no write was refused with EROFS (did the race reach the vault at all?):\n%s", r.stdout)
	}
	after, err := testutil.Take(e.vault.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range testutil.Diff(before, after, inInbox) {
		t.Errorf("vault changed: %s", p)
	}
	if _, err := os.Stat(filepath.Join(e.vault.Dir, "race.md")); err == nil {
		t.Errorf("race.md exists in the vault")
	}
}

// inInbox: the session's own inbox may change.
func inInbox(rel string) bool { return rel == "90-inbox" || strings.HasPrefix(rel, "90-inbox/") }

// starvingProbe: an agent of pid 1's uid lowers pid 1's descriptor limit to
// one and interrupts its threads, then writes. The listener must keep
// answering (a poll(2) of two descriptors fails with EINVAL under that
// limit, which once left every later write call waiting forever).
const starvingProbe = `
import os, resource, signal
print("PRLIMIT", resource.prlimit(1, resource.RLIMIT_NOFILE, (1, 1)))
for tid in range(2, 64):
    if tid != os.getpid():
        try: os.kill(tid, signal.SIGABRT)
        except OSError: pass
open("written-by-agent.txt", "w").write("agent\n")
try:
    open(os.path.join(os.environ["FEDMEM_VAULT"], "starved.md"), "w")
    print("VAULT ok")
except OSError as e:
    print("VAULT", e.errno)
print("END")
`

// TestDenialListenerSurvivesStarvedInit: the write calls still get their
// answer from the kernel when the agent starves pid 1 of descriptors.
func TestDenialListenerSurvivesStarvedInit(t *testing.T) {
	e := setup(t, layout{name: "beside/user", gateOwned: true, user: true})
	r := e.run(t, []string{"--fs-denials"}, "python3", "-c", starvingProbe)
	if r.code != 0 || !strings.Contains(string(r.stdout), "VAULT 30\nEND\n") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
