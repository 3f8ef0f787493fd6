package escape

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fedmem/fedmem/test/testutil"
)

// Red-team 2: the container backends (runc, containerd) and the profile
// search path. Each test runs under FEDMEM_BACKEND (the matrix) and asserts
// the secure outcome: it fails while the breach exists.

// TestRedteam2NestedWorkdirProfilePlant: .fedmem is read-only only at the
// top of the workdir (the plan holds ProjectFamilies only at the top of the
// workdir and of each writable: directory). The agent makes sub/.fedmem/profiles/evil.yaml in a
// subdirectory of its writable workdir; files it writes there are the
// caller's on the host (idmapped owner<->agent for a root caller), 0644 in
// 0755 folders, so trustedProfileFile accepts them. The user's next
// `fedmem-run --profile evil` started in that subdirectory (a monorepo
// package, a nested checkout) runs the agent's profile: here it opens a
// host directory outside the workdir for writing (guarantee 6: nothing the
// agent writes decides what a later session may touch).
func TestRedteam2NestedWorkdirProfilePlant(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	canary := filepath.Join(e.base, "canary")
	must(t, os.MkdirAll(canary, 0o755))
	evil := "name: evil\nextends: default\nwritable:\n  - " + canary + "\n"
	plant := `import os, sys
os.makedirs("sub/.fedmem/profiles", exist_ok=True)
open("sub/.fedmem/profiles/evil.yaml", "w").write(sys.argv[1])
print("planted")`
	r := e.run(t, []string{"--profile", "default"}, "python3", "-c", plant, evil)
	if r.code != 0 {
		t.Fatalf("session 1: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// .fedmem is held read-only only at the workdir's top: the agent can
	// write sub/.fedmem, and after the session fedmem-run moves it aside
	// (sweepNestedRepos' persistence names: TestRedteamNestedPersistPlant).
	// The second defence is tested here: the user restores it (mv, as the
	// event says) without reading it, and still no later session uses it
	// unallowed.
	planted := filepath.Join(e.workdir, "sub/.fedmem/profiles/evil.yaml")
	if _, err := os.Lstat(planted); err == nil {
		t.Errorf("%s still there after the session: not moved aside", planted)
	}
	q := filepath.Join(e.workdir, "sub/.fedmem.fedmem-quarantined-"+r.session)
	if err := os.Rename(q, filepath.Join(e.workdir, "sub/.fedmem")); err != nil {
		t.Errorf("restoring the quarantined %s: %v", q, err)
	}

	// Session 2: the user runs in the subdirectory with the name.
	sub := *e
	sub.workdir = filepath.Join(e.workdir, "sub")
	if _, err := os.Stat(sub.workdir); err != nil {
		return // nothing planted: defence held
	}
	r = sub.run(t, []string{"--profile", "evil"}, "sh", "-c", "echo pwned > "+canary+"/x && echo wrote")
	if r.code == 0 && strings.Contains(string(r.stdout), "wrote") {
		t.Errorf("BREACH session 2 in %s ran the agent-planted profile evil (report profile %v) and wrote %s/x outside its workdir", sub.workdir, r.report["profile"], canary)
	}
	if _, err := os.Stat(filepath.Join(canary, "x")); err == nil {
		t.Errorf("BREACH %s/x written on the host through the planted profile", canary)
	}
	// Refused for the right reason: the file's content was never allowed.
	if r.code != 125 || !strings.Contains(string(r.stderr), planted) || !strings.Contains(string(r.stderr), "has not been allowed") ||
		!strings.Contains(string(r.stderr), "fedmem profile allow "+planted) {
		t.Errorf("session 2 with the planted profile: exit %d, want 125 naming %s as not allowed\n%s", r.code, planted, r.stderr)
	}
	checkErrorReport(t, r.code, string(r.stderr), r.report, "profile", "has not been allowed")
}

// containerProbe is the hostile agent looking for a way out of a container
// backend: its own credentials and layers, descriptors leaked from the
// helper or the runtime (fedmem-runc's --pid-fd, init and sync pipes, the
// fds socket), the runtime's processes (/proc/<pid>/root, /proc/<pid>/exe:
// the CVE-2019-5736 family), the init binary bound at /dev/.fedmem, the
// roots folder of fedmem-containerd gc, runtime sockets, the cgroupfs,
// the hostname and the mount flags of /.
const containerProbe = `
import errno, os, socket, sys
def out(k, v): print(k + "=" + str(v), flush=True)
def err(fn):
    try:
        fn(); return "OK"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
st = {l.split(":")[0]: l.split(":", 1)[1].strip() for l in open("/proc/self/status")}
for k in ("Uid", "CapEff", "CapPrm", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp"):
    out(k, st[k].split()[0] if st[k] else "")
me = os.getpid()
fds = sorted(int(f) for f in os.listdir("/proc/self/fd"))
extra = []
for f in fds:
    if f <= 2: continue
    try: extra.append("%d:%s" % (f, os.readlink("/proc/self/fd/%d" % f)))
    except OSError: pass
out("fds", ",".join(x for x in extra if "/proc/" not in x.split(":",1)[1]))
others = []
for p in os.listdir("/proc"):
    if not p.isdigit() or int(p) == me: continue
    try: exe = os.readlink("/proc/%s/exe" % p)
    except OSError: continue
    others.append(p + ":" + exe)
out("exe_visible", ",".join(others))
out("proc1_root", err(lambda: os.listdir("/proc/1/root/")))
out("write_init", err(lambda: open("/dev/.fedmem/fedmem-sandbox-init", "r+b").close()))
out("roots", err(lambda: os.listdir("/run/fedmem/containerd/roots")))
socks = []
for d in ("/run", "/var/run", "/run/containerd", "/tmp", "/dev/.fedmem", "/var/lib/containerd"):
    for root, dirs, files in os.walk(d):
        for n in files:
            p = os.path.join(root, n)
            try:
                import stat
                if stat.S_ISSOCK(os.lstat(p).st_mode): socks.append(p)
            except OSError: pass
out("sockets", ",".join(socks))
def conn(a):
    s = socket.socket(socket.AF_UNIX); s.connect(a)
for a in (sys.argv[1], "/run/containerd/containerd.sock", "/run/containerd/containerd.sock.ttrpc"):
    out("connect " + a, err(lambda: conn(a)))
out("cgroup_write", err(lambda: open("/sys/fs/cgroup/cgroup.procs" if os.path.exists("/sys/fs/cgroup/cgroup.procs") else "/sys/fs/cgroup/pids/cgroup.procs", "w").write(str(me))))
out("sethostname", err(lambda: socket.sethostname("evil")))
out("mqueue_dir", err(lambda: os.mkdir("/dev/mqueue/x")))
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
nr = {"x86_64": 248, "aarch64": 217}[os.uname().machine]  # add_key
out("add_key", "OK" if libc.syscall(nr, b"user", b"x", b"v", 1, ctypes.c_long(-3)) >= 0 else errno.errorcode[ctypes.get_errno()])
for l in open("/proc/self/mountinfo"):
    f = l.split()
    if f[4] == "/": out("root_opts", f[5])
`

// TestRedteam2ContainerBackendAgentView: the same hostile probe under every
// backend (run the suite with FEDMEM_BACKEND=runc and =containerd): the agent
// holds no capability, runs with no_new_privs and fedmem's seccomp filter
// (mode 2) as a non-root uid, inherits no descriptor beyond stdio, sees no
// other process's exe or root (the runtime, the shim, fedmem's init), cannot
// open the init binary for writing (CVE-2019-5736), cannot see the roots
// folder fedmem-containerd gc works on, reaches no containerd or shim
// socket, cannot write the cgroupfs or set the hostname, and its / is
// mounted read-only, nosuid and nodev as in the namespace backend.
func TestRedteam2ContainerBackendAgentView(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	sock := os.Getenv("FEDMEM_CONTAINERD_ADDRESS")
	if sock == "" {
		sock = "/run/containerd/containerd.sock"
	}
	r := e.run(t, []string{"--profile", "default", "--network", "none"}, "python3", "-c", containerProbe, sock)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(r.stdout)), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			got[k] = v
		}
	}
	t.Logf("backend %s: %v", testutil.Backend(), got)
	want := map[string]string{"Uid": "", "CapEff": "0000000000000000", "CapPrm": "0000000000000000", "CapBnd": "0000000000000000", "CapAmb": "0000000000000000", "NoNewPrivs": "1", "Seccomp": "2", "fds": "", "exe_visible": "", "sockets": ""}
	for k, v := range want {
		if k == "Uid" {
			if got[k] == "0" || got[k] == "" {
				t.Errorf("BREACH agent uid %q (want a non-root host uid)", got[k])
			}
			continue
		}
		if got[k] != v {
			t.Errorf("BREACH %s = %q, want %q", k, got[k], v)
		}
	}
	for _, k := range []string{"proc1_root", "write_init", "roots", "connect " + sock, "connect /run/containerd/containerd.sock", "connect /run/containerd/containerd.sock.ttrpc", "cgroup_write", "sethostname", "add_key"} {
		if got[k] == "OK" || got[k] == "" {
			t.Errorf("BREACH %s: %q, want an error", k, got[k])
		}
	}
	// The container backends bind the init at /dev/.fedmem (read-only,
	// root's 0755 file); the namespace backend has none there.
	if w := got["write_init"]; w != "EROFS" && w != "EACCES" && !(testutil.Backend() == "namespace" && w == "ENOENT") {
		t.Errorf("BREACH write_init: %q, want EROFS or EACCES", w)
	}
	opts := strings.Split(got["root_opts"], ",")
	for _, o := range []string{"ro", "nosuid", "nodev"} {
		if !contains(opts, o) {
			t.Errorf("PARITY / is mounted %q under %s: no %s (the namespace and runc backends mount it ro,nosuid,nodev; setuid files and device nodes of the host's / keep their meaning, held back only by no_new_privs and the agent's uid)", got["root_opts"], testutil.Backend(), o)
		}
	}
}

// TestRedteam2ContainerdGCSparesPlantedRoots: `fedmem-containerd gc` works
// in /run/fedmem/containerd/roots, shared by every helper on the host. It
// must never act on a host path through what it finds there: a symbolic
// link to a host mount point (GC would unmount through it: umount follows
// links), a clone whose .owner names a live process, and a folder with no
// owner and content (Release is rmdir, never recursive). The agent cannot
// reach the folder (TestRedteam2ContainerBackendAgentView: roots ENOENT
// inside); this is the root caller's own tree, planted as a host user with
// write access there would.
func TestRedteam2ContainerdGCSparesPlantedRoots(t *testing.T) {
	if testutil.Backend() != "containerd" {
		t.Skip("the containerd backend's gc (FEDMEM_BACKEND=containerd)")
	}
	e := setup(t, layout{name: "beside/root"})
	sock := os.Getenv("FEDMEM_CONTAINERD_ADDRESS")
	testutil.RequireBackendTools(t, "containerd", e.bins.FedmemRun, sock)
	// A session makes the roots folder (a private tmpfs) if it is not there.
	if r := e.run(t, nil, "true"); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	const roots = "/run/fedmem/containerd/roots"
	if _, err := os.Stat(roots); err != nil {
		t.Fatalf("%s after a containerd session: %v", roots, err)
	}
	tag := filepath.Base(e.base)
	mnt := filepath.Join(e.base, "mnt")
	must(t, os.MkdirAll(mnt, 0o755))
	must(t, syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=64k"))
	t.Cleanup(func() { _ = syscall.Unmount(mnt, syscall.MNT_DETACH) })
	must(t, os.WriteFile(filepath.Join(mnt, "canary"), []byte("host"), 0o644))
	link := filepath.Join(roots, "rt2link-"+tag)
	live := filepath.Join(roots, "rt2live-"+tag)
	full := filepath.Join(roots, "rt2full-"+tag)
	must(t, os.Symlink(mnt, link))
	must(t, os.Mkdir(live, 0o700))
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	must(t, os.WriteFile(live+".owner", []byte(fmt.Sprintf("%d@%s", os.Getpid(), strings.TrimSpace(string(boot)))), 0o600))
	must(t, os.MkdirAll(filepath.Join(full, "etc"), 0o755))
	must(t, os.WriteFile(filepath.Join(full, "etc/keep"), []byte("x"), 0o644))
	t.Cleanup(func() {
		for _, p := range []string{link, live + ".owner", filepath.Join(full, "etc/keep"), filepath.Join(full, "etc"), full, live} {
			_ = os.Remove(p)
		}
	})
	out, err := exec.Command(filepath.Join(filepath.Dir(e.bins.FedmemRun), "fedmem-containerd"), "gc", "--address", sock).CombinedOutput()
	t.Logf("gc: %v %s", err, out)
	if b, err := os.ReadFile(filepath.Join(mnt, "canary")); err != nil || string(b) != "host" {
		t.Errorf("BREACH gc acted through the link %s -> %s: canary %q %v", link, mnt, b, err)
	}
	if _, err := os.Lstat(link); err != nil {
		t.Logf("gc removed the link itself (harmless): %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("BREACH gc removed %s, whose owner (this test, pid %d) is alive: %v", live, os.Getpid(), err)
	}
	if _, err := os.Stat(filepath.Join(full, "etc/keep")); err != nil {
		t.Errorf("BREACH gc deleted content under %s recursively: %v", full, err)
	}
}

// TestRedteam2SetuidRootPlantedThroughIdmap: a root caller's writable
// workdir (and home.writable caches) are idmapped owner<->agent, so a file
// the agent creates there is root's on the host. The agent owns it in its
// view, so chmod 04755/06755 is allowed, and nothing strips the bits: the
// host then holds a setuid-root, setgid-root copy of /bin/sh, and any local
// user (here uid 65000, no groups) who runs it gets euid 0 (guarantee 5:
// the agent holds nothing of its caller's host authority; guarantee 6:
// nothing it writes runs later outside with more than it had). The
// sandbox's own mount is nosuid; the host's is not.
func TestRedteam2SetuidRootPlantedThroughIdmap(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	must(t, os.Chmod(e.base, 0o755))
	must(t, os.Chmod(e.home, 0o755))
	must(t, os.MkdirAll(filepath.Join(e.home, ".cache"), 0o755))
	targets := []string{filepath.Join(e.workdir, "suid"), filepath.Join(e.workdir, "sgid"), filepath.Join(e.home, ".cache", "suid")}
	script := ""
	for i, p := range targets {
		mode := "4755"
		if i == 1 {
			mode = "6755"
		}
		script += "cp /bin/sh " + p + " && chmod " + mode + " " + p + "; "
	}
	r := e.run(t, []string{"--profile", "default"}, "sh", "-c", script+"ls -ln "+strings.Join(targets, " "))
	t.Logf("agent (exit %d): %s%s", r.code, r.stdout, r.stderr)
	// Where the files landed: the workdir, and the home's state store
	// (~/.cache is bound from ~/.local/share/fedmem/PROFILE/).
	var found []string
	for _, root := range []string{e.workdir, e.home} {
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			fi, err := os.Lstat(p)
			if err != nil {
				return nil
			}
			st := fi.Sys().(*syscall.Stat_t)
			if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 && (st.Uid == 0 || st.Gid == 0) {
				found = append(found, p)
				t.Errorf("BREACH %s is %v uid %d gid %d on the host after the session: a setuid/setgid-root file the agent made through an idmapped writable mount", p, fi.Mode(), st.Uid, st.Gid)
			}
			return nil
		})
	}
	for _, p := range found {
		out, _ := exec.Command("setpriv", "--reuid", "65000", "--regid", "65000", "--clear-groups", p, "-p", "-c", "id").CombinedOutput()
		if strings.Contains(string(out), "euid=0") || strings.Contains(string(out), "egid=0") {
			t.Errorf("BREACH a local user (uid 65000) running %s gets root: %q", p, out)
		}
	}
}

// renameAncestors: the agent, its workdir the home, moves aside the folders
// that hold read-only names (~/.config holds ~/.config/fedmem, ~/.local
// holds ~/.local/bin) to create the names anew in a fresh folder: a user
// profile ~/.config/fedmem/profiles/default.yaml the next session would
// use, a command first on PATH.
const renameAncestors = `
import errno, os
def a(n, f):
    try: f(); print(n, "OK")
    except OSError as e: print(n, errno.errorcode[e.errno])
h = os.environ["HOME"]
a("rename .config", lambda: os.rename(h+"/.config", h+"/.config-old"))
a("mkdir .config/fedmem/profiles", lambda: os.makedirs(h+"/.config/fedmem/profiles"))
a("write profile", lambda: open(h+"/.config/fedmem/profiles/default.yaml", "w").write("name: default\n"))
a("rename .local", lambda: os.rename(h+"/.local", h+"/.local-old"))
a("mkdir .local/bin", lambda: os.makedirs(h+"/.local/bin", exist_ok=True))
a("write .local/bin/git", lambda: open(h+"/.local/bin/git", "w").write("#!/bin/sh\n"))
`

// TestRedteam2RenameAncestorOfHeldName: the held names survive a rename of
// their parent (EBUSY: the folder holds a mount point), so nothing of the
// agent's lands at ~/.config/fedmem/profiles or ~/.local/bin on the host,
// whichever backend, with the home as the writable workdir.
func TestRedteam2RenameAncestorOfHeldName(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	h := *e
	h.workdir = e.home
	r := h.run(t, []string{"--profile", "default"}, "python3", "-c", renameAncestors)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	got := probeLines(r.stdout)
	t.Logf("%s: %v", testutil.Backend(), got)
	for _, k := range []string{"rename .config", "rename .local"} {
		if got[k] != "EBUSY" && !writeDenied[got[k]] {
			t.Errorf("BREACH %s: %q, want EBUSY (it holds a read-only mount point)", k, got[k])
		}
	}
	for _, k := range []string{"write profile", "write .local/bin/git"} {
		if got[k] == "OK" {
			t.Errorf("BREACH %s succeeded", k)
		}
	}
	for _, p := range []string{".config/fedmem/profiles/default.yaml", ".local/bin/git", ".config-old", ".local-old"} {
		if _, err := os.Lstat(filepath.Join(e.home, p)); err == nil {
			t.Errorf("BREACH ~/%s exists on the host after the session", p)
		}
	}
}

// waitFor is an agent that prints "waiting", waits (at most 60 s) for the
// host file argv[1] to appear, then tries to write argv[2] and prints the
// outcome, and says whether argv[3] exists.
const waitFor = `
import errno, os, sys, time
print("waiting", flush=True)
for i in range(600):
    if os.path.exists(sys.argv[1]): break
    time.sleep(0.1)
else:
    print("never saw", sys.argv[1], flush=True)
if len(sys.argv) > 2:
    try:
        open(sys.argv[2], "w").write("x"); print(sys.argv[2], "OK")
    except OSError as e:
        print(sys.argv[2], errno.errorcode[e.errno])
if len(sys.argv) > 3:
    print("propagated", "yes" if os.path.exists(sys.argv[3]) else "no")
`

// startWaiting starts fedmem-run with the waitFor agent and returns once it
// printed "waiting", and a function that waits for its end.
func startWaiting(t *testing.T, e *env, args ...string) (wait func() string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	cmd := e.command(ctx, "", []string{"--profile", "default", "--network", "none"}, append([]string{"python3", "-c", waitFor}, args...)...)
	pr, pw, err := os.Pipe()
	must(t, err)
	cmd.Stdout, cmd.Stderr = pw, pw
	must(t, cmd.Start())
	pw.Close()
	var out bytes.Buffer
	got := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		seen := false
		for {
			n, err := pr.Read(buf)
			out.Write(buf[:n])
			if !seen && bytes.Contains(out.Bytes(), []byte("waiting")) {
				seen = true
				close(got)
			}
			if err != nil {
				if !seen {
					close(got)
				}
				return
			}
		}
	}()
	<-got
	return func() string {
		defer cancel()
		<-done
		_ = cmd.Wait()
		return out.String()
	}
}

// TestRedteam2HostMountNoPropagation: a mount the host makes while the
// agent runs, below a path the sandbox shows read-only (here a folder
// beside the workdir), must not appear inside with its own, writable flags:
// the sandbox's root and binds do not receive propagation from the host.
func TestRedteam2HostMountNoPropagation(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	prop := filepath.Join(e.base, "prop")
	must(t, os.MkdirAll(prop, 0o755))
	marker := filepath.Join(e.base, "mounted")
	wait := startWaiting(t, e, marker, filepath.Join(prop, "pwn"), filepath.Join(prop, "ready"))
	must(t, syscall.Mount("tmpfs", prop, "tmpfs", 0, "size=64k,mode=1777"))
	t.Cleanup(func() { _ = syscall.Unmount(prop, syscall.MNT_DETACH) })
	must(t, os.WriteFile(filepath.Join(prop, "ready"), nil, 0o644))
	// The marker is on the host's own filesystem, which the sandbox shows
	// read-only: the agent sees it, whatever happened to the mount.
	must(t, os.WriteFile(marker, nil, 0o644))
	out := wait()
	t.Logf("%s: %s", testutil.Backend(), out)
	if strings.Contains(out, "pwn OK") {
		t.Errorf("BREACH the host's new mount at %s propagated into the sandbox writable: %s", prop, out)
	}
	if _, err := os.Stat(filepath.Join(prop, "pwn")); err == nil {
		t.Errorf("BREACH %s/pwn written on the host", prop)
	}
	if strings.Contains(out, "propagated yes") {
		t.Errorf("the agent saw the host's new mount (propagation), though it could not write: %s", out)
	}
}

// TestRedteam2ConcurrentSessionsLeaveNothing: two sessions in one workdir,
// the second starting and ending while the first runs. Each holds absent
// persistence names (.git as a whole in this non-Git workdir) with placeholders and
// removes them after; the second sees the first's placeholders as the
// user's files. When both are over, the workdir must hold exactly what it
// held before: a leftover empty .git makes git look past the workdir (to
// an enclosing repository), a leftover .claude or .mcp.json changes what
// the next agent loads.
func TestRedteam2ConcurrentSessionsLeaveNothing(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	before, _ := os.ReadDir(e.workdir)
	// A starts; B starts while A runs (it sees A's placeholders); A ends
	// first; then B.
	relA, relB := filepath.Join(e.base, "releaseA"), filepath.Join(e.base, "releaseB")
	waitA := startWaiting(t, e, relA)
	waitB := startWaiting(t, e, relB)
	must(t, os.WriteFile(relA, nil, 0o644))
	t.Logf("session A: %s", waitA())
	must(t, os.WriteFile(relB, nil, 0o644))
	t.Logf("session B: %s", waitB())
	after, _ := os.ReadDir(e.workdir)
	names := func(ds []os.DirEntry) (s []string) {
		for _, d := range ds {
			s = append(s, d.Name())
		}
		return
	}
	if b, a := names(before), names(after); strings.Join(b, ",") != strings.Join(a, ",") {
		t.Errorf("BREACH the workdir held %v before two concurrent sessions and %v after: placeholders left behind", b, a)
	}
}

// TestRedteam2ProfileFileInWorkdir: a profile named as a FILE
// (`--profile ./agent.yaml`, a path with / or .) is read as named, with none
// of the search path's rules, and the workdir is the agent's to write. The
// user keeps the project's profile in the repository and names it; the
// agent edits it; the next session runs the agent's profile, which here
// opens a host folder outside the workdir for writing. fedmem should refuse
// (or at least hold read-only, or warn about) a profile file that lies in a
// path the profile makes writable.
func TestRedteam2ProfileFileInWorkdir(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	canary := filepath.Join(e.base, "canary")
	must(t, os.MkdirAll(canary, 0o755))
	prof := filepath.Join(e.workdir, "agent.yaml")
	must(t, os.WriteFile(prof, []byte("name: agent\nextends: default\n"), 0o644))
	evil := "name: agent\nextends: default\nwritable:\n  - " + canary + "\n"
	// The user reads the file and allows it: the legitimate first run.
	e.allowProfile(t, prof)
	r := e.run(t, []string{"--profile", prof}, "python3", "-c", "import sys; open(sys.argv[1], 'w').write(sys.argv[2]); print('edited')", prof, evil)
	t.Logf("session 1 (exit %d): %s%s", r.code, r.stdout, r.stderr)
	if r.code != 0 || !strings.Contains(string(r.stdout), "edited") {
		t.Fatalf("session 1 with the allowed profile: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The agent may rewrite it (the workdir is its to write); the rewritten
	// content was never allowed.
	r = e.run(t, []string{"--profile", prof}, "sh", "-c", "echo pwned > "+canary+"/x && echo wrote")
	if strings.Contains(string(r.stdout), "wrote") {
		t.Errorf("BREACH session 2 ran the agent-edited %s and wrote %s/x outside its workdir", prof, canary)
	}
	if r.code != 125 || !strings.Contains(string(r.stderr), prof) || !strings.Contains(string(r.stderr), "has not been allowed") ||
		!strings.Contains(string(r.stderr), "lies inside "+e.workdir) {
		t.Errorf("session 2 with the agent-edited profile: exit %d, want 125 naming %s as not allowed\n%s", r.code, prof, r.stderr)
	}
}
