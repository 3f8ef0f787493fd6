package escape

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fedmem/fedmem/test/testutil"
)

// Red-team findings against the filesystem-denial listener (seccomp user
// notification served by pid 1), --report always written, and profile
// resolution. Each test asserts the secure outcome: a test that fails here
// is a breach (see the BREACH lines it logs).

// listenerProbe attacks the write listener from inside the sandbox. It
// hands the listener paths it must not choke on — a path running into an
// unreadable page with no NUL, a bad pointer, a path longer than PATH_MAX,
// a FIFO, pid 1's /proc entries (invisible to the agent, resolved by the
// listener in its own context), openat2 — then races a thread that flips
// the path buffer between the vault and /tmp while the main thread opens
// it, then floods vault writes past the report cap. It prints one line per
// probe, "END" and exits 7: the exit code must pass through.
const listenerProbe = `
import ctypes, os, sys, threading, mmap, struct
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
V, I = os.environ["FEDMEM_VAULT"], os.environ["FEDMEM_INBOX"]
O_WRONLY, O_RDWR, O_CREAT, O_NONBLOCK, O_TRUNC = 0o1, 0o2, 0o100, 0o4000, 0o1000
NR_openat, NR_openat2 = 257, 437
AT_FDCWD = -100
def sc_open(ptr, flags):
    r = libc.syscall(ctypes.c_long(NR_openat), ctypes.c_long(AT_FDCWD), ctypes.c_void_p(ptr), ctypes.c_long(flags), ctypes.c_long(0o644))
    e = ctypes.get_errno()
    if r >= 0:
        os.close(r)
        return "ok"
    return str(e)
PAGE = mmap.PAGESIZE
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
base = libc.mmap(None, 2*PAGE, 3, 0x22, -1, 0)
# Unterminated: PAGE bytes of 'a' then an unreadable page.
ctypes.memset(base, ord("a"), PAGE)
libc.mprotect(base + PAGE, PAGE, 0)
print("UNTERMINATED", sc_open(base, O_WRONLY|O_CREAT))
# A path whose last bytes sit just before the unreadable page (ends with NUL).
p = (V + "/edge.md").encode() + b"\0"
ctypes.memmove(base + PAGE - len(p), p, len(p))
print("EDGE", sc_open(base + PAGE - len(p), O_WRONLY|O_CREAT))
print("BADPTR", sc_open(1, O_WRONLY|O_CREAT))
print("UNMAPPED", sc_open(base + PAGE, O_WRONLY|O_CREAT))
long_path = "/tmp/" + "a/" * 3000
buf = ctypes.create_string_buffer(long_path.encode())
print("TOOLONG", sc_open(ctypes.addressof(buf), O_WRONLY|O_CREAT))
os.mkfifo("/tmp/fifo")
buf = ctypes.create_string_buffer(b"/tmp/fifo")
print("FIFO", sc_open(ctypes.addressof(buf), O_WRONLY|O_NONBLOCK))
os.symlink("/tmp/fifo", "/tmp/fifolink")
buf = ctypes.create_string_buffer(b"/tmp/fifolink")
print("FIFOLINK", sc_open(ctypes.addressof(buf), O_RDWR))
for q in [b"/proc/1/root/tmp/pid1", b"/proc/1/cwd/x", b"/proc/self/fd/0", b"/proc/thread-self/root" + V.encode() + b"/thr.md", b"/dev/null"]:
    buf = ctypes.create_string_buffer(q)
    print("PROC", q.decode(), sc_open(ctypes.addressof(buf), O_WRONLY|O_CREAT))
# openat2 write into the vault.
how = ctypes.create_string_buffer(struct.pack("QQQ", O_WRONLY|O_CREAT, 0o644, 0), 24)
buf = ctypes.create_string_buffer((V + "/openat2.md").encode())
r = libc.syscall(ctypes.c_long(NR_openat2), ctypes.c_long(AT_FDCWD), ctypes.c_void_p(ctypes.addressof(buf)), ctypes.c_void_p(ctypes.addressof(how)), ctypes.c_long(24))
print("OPENAT2", "ok" if r >= 0 else ctypes.get_errno())
# Race: one thread flips the buffer between a vault path and a /tmp path.
a = (V + "/race.md").encode().ljust(200, b"\0")
b = b"/tmp/race.md".ljust(200, b"\0")
race = ctypes.create_string_buffer(200)
stop = False
def flip():
    while not stop:
        ctypes.memmove(race, a, 200)
        ctypes.memmove(race, b, 200)
th = threading.Thread(target=flip); th.start()
res = {}
for i in range(3000):
    r = sc_open(ctypes.addressof(race), O_WRONLY|O_CREAT|O_TRUNC)
    res[r] = res.get(r, 0) + 1
stop = True; th.join()
print("RACE", sorted(res.items()))
# Flood: more vault writes than the report cap, from several threads.
def flood():
    for i in range(600):
        try:
            open(os.path.join(V, "flood-%d.md" % i), "w")
        except OSError:
            pass
ts = [threading.Thread(target=flood) for _ in range(4)]
[t.start() for t in ts]; [t.join() for t in ts]
print("END")
sys.stdout.flush()
os._exit(7)
`

// TestRedteamListenerHostilePaths: the listener in pid 1 survives every
// hostile path (no hang, no crash: the agent's exit code 7 passes
// through and its last line is printed), decides nothing (vault writes all
// fail, whatever the listener read; the vault is unchanged), and keeps the
// flood within the report cap (at most 256 denials and one truncation
// marker, every event line a valid JSON object below PIPE_BUF).
func TestRedteamListenerHostilePaths(t *testing.T) {
	for _, l := range []layout{{name: "beside/root"}, {name: "own-vault/user", user: true, agentOwned: true}} {
		t.Run(l.name, func(t *testing.T) {
			e := setup(t, l)
			evs := filepath.Join(e.outDir, "events.jsonl")
			r := e.run(t, []string{"--events", evs}, "python3", "-c", listenerProbe)
			out := string(r.stdout)
			t.Logf("probe:\n%s", out)
			if r.code != 7 || !strings.Contains(out, "END\n") {
				t.Fatalf("BREACH: the agent's exit code or output did not pass through (pid 1 hung or failed): exit %d\n%s%s", r.code, out, r.stderr)
			}
			for _, line := range strings.Split(out, "\n") {
				if strings.HasPrefix(line, "EDGE ") && !strings.HasSuffix(line, " 30") { // EROFS
					t.Errorf("BREACH %q: want EROFS", line)
				}
				// openat2 never reaches the kernel's path walk: the
				// seccomp rule "openat2" answers ENOSYS (its mode sits
				// in memory the filter cannot read; docs/seccomp.md).
				if strings.HasPrefix(line, "OPENAT2 ") && !strings.HasSuffix(line, " 38") { // ENOSYS
					t.Errorf("BREACH %q: want ENOSYS from the seccomp rule openat2", line)
				}
			}
			// Nothing the listener read made a vault write succeed.
			for _, name := range []string{"edge.md", "openat2.md", "race.md", "thr.md", "flood-0.md", "aaaa"} {
				if _, err := os.Lstat(filepath.Join(e.vault.Dir, name)); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("BREACH: %s exists in the vault (%v)", name, err)
				}
			}
			if st, err := testutil.Git(e.vault.Dir, "status", "--porcelain", "--untracked-files=all"); err != nil || strings.TrimSpace(st) != "" {
				t.Errorf("BREACH: vault changed: %q %v", st, err)
			}
			if head, err := testutil.Git(e.vault.Dir, "rev-parse", "HEAD"); err != nil || strings.TrimSpace(head) != e.head {
				t.Errorf("BREACH: vault HEAD moved: %q %v", head, err)
			}
			f, err := os.Open(evs)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			denied, truncated := 0, 0
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				if len(sc.Bytes()) >= 4096 {
					t.Errorf("event line of %d bytes (not one atomic pipe write)", len(sc.Bytes()))
				}
				var m map[string]any
				if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
					t.Fatalf("event line %q: %v", sc.Bytes(), err)
				}
				if m["event"] == "denied" {
					denied++
					if m["truncated"] == true {
						truncated++
					}
				}
			}
			if denied > 257 || truncated != 1 {
				t.Errorf("denied events %d (truncation markers %d): want at most 256 + one marker", denied, truncated)
			}
		})
	}
}

// TestRedteamReportSwappedByAgent: `--report session.json` in the workdir
// (the README's and quickstart's own example). fedmem-run opens the file
// before the agent starts and rewrites it in place through its descriptor
// at the end — but the agent can write the workdir, so it renames a forged
// report over the path: fedmem-run's real report goes to the unlinked
// inode and the caller (a CI job) reads the agent's forgery. The report at
// the path after the run must be fedmem-run's.
func TestRedteamReportSwappedByAgent(t *testing.T) {
	for _, l := range []layout{{name: "beside/root"}, {name: "beside/user", gateOwned: true, user: true}} {
		t.Run(l.name, func(t *testing.T) {
			e := setup(t, l)
			rep := filepath.Join(e.workdir, "session.json")
			forge := `{"schema_version":1,"session":"forged","exit_code":0,"limits_hit":[],"forged":true}`
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := e.command(ctx, rep, nil, "sh", "-c", `printf '%s\n' "$1" > "$2.new" && mv -f "$2.new" "$2" && exit 3`, "sh", forge, rep)
			out, err := cmd.CombinedOutput()
			if code := exitCode(err); code != 3 {
				t.Fatalf("exit %d, want 3\n%s", code, out)
			}
			b, err := os.ReadFile(rep)
			if err != nil {
				t.Fatalf("report: %v", err)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatalf("report %q: %v", b, err)
			}
			if m["forged"] == true || m["session"] == "forged" || m["exit_code"] != 3.0 {
				t.Errorf("BREACH: the report at %s is the agent's forgery (exit_code %v, session %v), not fedmem-run's (exit 3): the agent renamed a file over it during the run and fedmem-run wrote the unlinked inode", rep, m["exit_code"], m["session"])
			}
		})
	}
}

// TestRedteamReportDirLinkFromOtherWorkdir: an earlier session whose
// workdir was W1 replaced W1/out by a symbolic link to a directory of its
// choice (here a canary directory; /etc/cron.d or ~root/.ssh in an attack).
// A later `fedmem-run --workdir W2 --report W1/out/r.json` as root follows
// it: openOutput guards only the current plan's writable paths, and W1 is
// not one of them. The report must not be created through the link.
func TestRedteamReportDirLinkFromOtherWorkdir(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	canary := filepath.Join(e.base, "canary-target")
	must(t, os.MkdirAll(canary, 0o755))
	out := filepath.Join(e.workdir, "out")
	must(t, os.MkdirAll(out, 0o755))
	// Session 1, workdir W1 = e.workdir: the agent swaps out/ for a link.
	r := e.run(t, nil, "sh", "-c", `rm -rf "$1" && ln -s "$2" "$1"`, "sh", out, canary)
	if r.code != 0 {
		t.Fatalf("session 1: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if fi, err := os.Lstat(out); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("session 1 did not plant the link: %v %v", fi, err)
	}
	// Session 2, another workdir, report under W1/out.
	w2 := filepath.Join(e.base, "work2")
	must(t, os.MkdirAll(w2, 0o755))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e2 := *e
	e2.workdir = w2
	cmd := e2.command(ctx, filepath.Join(out, "r.json"), nil, "true")
	o, err := cmd.CombinedOutput()
	t.Logf("session 2: exit %d\n%s", exitCode(err), o)
	if _, err := os.Lstat(filepath.Join(canary, "r.json")); err == nil {
		t.Errorf("BREACH: fedmem-run (root) created %s through the link an earlier session planted at %s", filepath.Join(canary, "r.json"), out)
	}
}

// TestRedteamExtendsResolvedInWorkdir: a security team's profile file
// /…/profiles/team.yaml says `extends: base.yaml` (its sibling, a file
// path as docs/profiles.md allows). Load resolves the parent relative to
// fedmem-run's working directory — the workdir the agent writes — not to
// the profile's directory. An earlier session plants base.yaml there with
// `network: host`; the next run with --profile team.yaml gets the host's
// network (and anything else the planted parent adds: lists are appended).
func TestRedteamExtendsResolvedInWorkdir(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	pdir := filepath.Join(e.base, "profiles")
	must(t, os.MkdirAll(pdir, 0o755))
	must(t, os.WriteFile(filepath.Join(pdir, "base.yaml"), []byte("name: base\nextends: default\nnetwork: none\n"), 0o644))
	team := filepath.Join(pdir, "team.yaml")
	must(t, os.WriteFile(team, []byte("name: team\nextends: base.yaml\n"), 0o644))
	// Session 1 (any profile): the agent plants base.yaml in its workdir.
	planted := "name: base\nextends: default\nnetwork: host\n"
	r := e.run(t, nil, "sh", "-c", `printf '%s' "$1" > "$2"`, "sh", planted, filepath.Join(e.workdir, "base.yaml"))
	if r.code != 0 {
		t.Fatalf("session 1: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Session 2: the user runs the team profile from the workdir.
	r = e.run(t, []string{"--profile", team}, "true")
	t.Logf("session 2: exit %d, network %v\n%s", r.code, r.report["network"], r.stderr)
	if r.report["network"] == "host" {
		t.Errorf("BREACH: --profile %s extends base.yaml resolved to the agent's %s (network: host), not %s", team, filepath.Join(e.workdir, "base.yaml"), filepath.Join(pdir, "base.yaml"))
	}
	if r.report["network"] != "none" {
		t.Errorf("network %v, want none (the team's base.yaml beside team.yaml)", r.report["network"])
	}
}

// secondListenerProbe installs the agent's own seccomp filter with a
// listener that notifies mount(2). If the kernel took it, the agent's
// filter — the newest, with the same SECCOMP_RET_USER_NOTIF action as the
// init's deny rule — would win, and its own listener could answer
// CONTINUE: mount would run. The kernel allows one listener per filter
// chain (EBUSY), which is what keeps the deny-list in force.
const secondListenerProbe = `
import ctypes, struct
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR_seccomp, NR_mount = 317, 165
def ins(code, jt, jf, k): return struct.pack("HBBI", code, jt, jf, k)
prog = (ins(0x20, 0, 0, 0) +                 # ld [nr]
        ins(0x15, 0, 1, NR_mount) +          # jeq mount
        ins(0x06, 0, 0, 0x7fc00000) +        # ret USER_NOTIF
        ins(0x06, 0, 0, 0x7fff0000))         # ret ALLOW
buf = ctypes.create_string_buffer(prog, len(prog))
fprog = ctypes.create_string_buffer(struct.pack("HxxxxxxQ", 4, ctypes.addressof(buf)), 16)
r = libc.syscall(ctypes.c_long(NR_seccomp), ctypes.c_long(1), ctypes.c_long(8), ctypes.c_void_p(ctypes.addressof(fprog)))
print("LISTENER", r if r >= 0 else -ctypes.get_errno())
`

// TestRedteamSecondListenerRefused: the agent cannot install a listener of
// its own (the kernel refuses a second one in the chain: EBUSY), so no
// filter of its can CONTINUE a call the init's filter notifies.
func TestRedteamSecondListenerRefused(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	r := e.run(t, nil, "python3", "-c", secondListenerProbe)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := strings.TrimSpace(string(r.stdout)); got != "LISTENER -16" {
		t.Errorf("BREACH? agent's own listener: %q, want LISTENER -16 (EBUSY: one listener per filter chain)", got)
	}
}
