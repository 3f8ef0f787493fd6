package escape

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/test/testutil"
)

// swapUserUID is a local user who owns the folder above a root caller's
// workdir (a shared /srv/build, a CI checkout under a builder's tree).
const swapUserUID = 64002

// sourceSwap is one way to put another folder at a writable source's
// name between fedmem-run's plan and its bind.
type sourceSwap struct {
	name string
	l    layout
	// prepare makes the tree and returns session B's workdir and the swap.
	prepare func(t *testing.T, e *env) swapPlan
}

// swapPlan is one prepared swap.
type swapPlan struct {
	wd string
	// canary is the folder the swap brings in (standing in for a system
	// folder) and canaryAfter where it is once swapped in.
	canary, canaryAfter string
	// in puts it at the name; back, when set, puts the workdir back once
	// the namespace backend's parent has cloned the source and before its
	// init looks at the mount point (whose link it refuses).
	in, back func(t *testing.T)
	// intended is where the workdir the plan judged is at the end: the
	// agent's write may land there and nowhere else.
	intended, intendedBack string
	// atHelper (container backends): in runs at the exec of the backend's
	// helper, after fedmem-run's last check of the sources, while the
	// runtime has yet to bind them.
	atHelper bool
}

// TestRedTeamWritableSourceSwapped: fedmem-run judges the workdir (rules
// workdir-system, workdir-other-home, workdir-home-config) on its path
// with links resolved, and binds it writable — for a root caller,
// idmapped so that the agent's files are root's on disk — a few
// milliseconds later, by name. Whoever may write a folder on the way — a
// concurrent session's agent whose workdir holds this one (its links are
// root's on disk through its own idmapped workdir), a local user who owns
// the folder above — replaces the workdir, or a folder above it, with a
// link to a system folder, or renames another of root's folders into its
// place, in between: the agent then got that folder (here a canary in
// place of /etc/cron.d) writable as root. The triggers are deterministic
// fanotify permission events: fedmem-run is held in its open of the
// session folder it just made (the plan is done, the backend has not
// started) while the swap is made; on the namespace backend a link is put
// back at the exec of the sandbox's init (the parent has opened the
// sources by then; the init's mount point check would see the link).
// Each writable source must be bound from a descriptor opened with no
// link followed that is still the folder pinned when the plan was made,
// or the session is refused (125, rule writable-source-swapped) before
// the agent runs; nothing lands in the folder swapped in. runc and
// containerd bind by path: fedmem-run checks the pins right before their
// helper starts, and case runtime-window swaps at the helper's exec, after
// that check: the init refuses the mount it finds, but the runtime has
// made mount points in the folder by then (an open residual, logged;
// FEDMEM_OPEN_BREACHES=1 makes it fail).
func TestRedTeamWritableSourceSwapped(t *testing.T) {
	for _, c := range []sourceSwap{
		{name: "agent-link", l: layout{name: "beside/root"}, prepare: swapByOtherSessionAgent},
		{name: "user-parent-link", l: layout{name: "beside/root"}, prepare: swapParentByUser},
		{name: "user-dir", l: layout{name: "beside/root"}, prepare: swapDirByUser},
		{name: "caller-link", l: layout{name: "beside/user", gateOwned: true, user: true}, prepare: swapToHomeConfig},
		{name: "runtime-window", l: layout{name: "beside/root"}, prepare: func(t *testing.T, e *env) swapPlan {
			sp := swapDirByUser(t, e)
			sp.atHelper = true
			return sp
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "runtime-window" && testutil.Backend() == "namespace" {
				t.Skip("the namespace backend binds from the descriptors it checked: no runtime opens a source by path")
			}
			e := setup(t, c.l)
			sp := c.prepare(t, e)
			if testutil.Backend() != "namespace" {
				// The runtime opens source and mount point by path at once:
				// the link stays (putting it back would leave the workdir
				// unmounted).
				sp.back = nil
			}
			intended := sp.intended
			if sp.back != nil {
				intended = sp.intendedBack
			}
			before := names(t, sp.canary)
			r, fired := runHeldSession(t, e, sp)
			probe, probeErr := os.Lstat(filepath.Join(sp.canaryAfter, "probe"))
			owner := -1
			if probeErr == nil {
				owner = int(probe.Sys().(*syscall.Stat_t).Uid)
			}
			_, ownErr := os.Lstat(filepath.Join(intended, "probe"))
			after := names(t, sp.canaryAfter)
			saw := bytes.Contains(r.stdout, []byte("CANARY-MARKER"))
			refused := r.code == 125 && bytes.Contains(r.stderr, []byte("writable-source-swapped"))
			switch {
			case fired == 0 || (sp.back != nil && fired < 2 && !refused):
				t.Fatalf("the swap ran %d of its steps: fedmem-run was not held where expected (exit %d): the test proves nothing\n%s", fired, r.code, r.stderr)
			case probeErr == nil || saw:
				t.Errorf("BREACH (%s): session B's workdir %s was swapped for %s after the plan: the agent saw it (%v) and its write landed there (%v, owner uid %d on disk), exit %d; the folder now holds %v (before: %v)\nstdout:\n%s\nstderr:\n%s",
					c.name, sp.wd, sp.canary, saw, probeErr == nil, owner, r.code, after, before, r.stdout, r.stderr)
			case r.code == 0 && ownErr == nil:
				t.Logf("%s: the swap changed nothing: the agent wrote into the workdir the plan judged (now %s)", c.name, intended)
			case !refused:
				t.Errorf("%s: swapped; exit %d, want 125 naming rule writable-source-swapped (or the agent's write in %s: %v)\n%s", c.name, r.code, intended, ownErr, r.stderr)
			default:
				t.Logf("%s: refused: %s", c.name, firstLine(r.stderr, "writable-source-swapped"))
			}
			switch {
			case slices.Equal(before, after):
			case sp.atHelper && os.Getenv("FEDMEM_OPEN_BREACHES") != "1":
				// The runtime makes the nested mounts' mount points in the
				// folder it bound before the init can refuse it.
				t.Logf("open residual (FEDMEM_OPEN_BREACHES=1 makes it fail): the %s runtime made mount points in the folder swapped in after fedmem-run's last check: %v, before %v", testutil.Backend(), after, before)
			default:
				t.Errorf("BREACH (%s): fedmem changed the folder swapped in for the workdir: %v, before %v", c.name, after, before)
			}
		})
	}
}

// swapByOtherSessionAgent: session A's agent, workdir work/, replaces
// work/sub (session B's workdir) with a link to the canary, and puts sub
// back when told (a line on its stdin each). A's writes land as root on disk (its idmapped workdir):
// the link is root's.
func swapByOtherSessionAgent(t *testing.T, e *env) swapPlan {
	sub := filepath.Join(e.workdir, "sub")
	must(t, os.Mkdir(sub, 0o755))
	canary := makeCanary(t, e, filepath.Join("sys", "etc", "cron.d"), 0)
	// One command a line; finish's "go" ends it (no read waits for an end
	// of file, which containerd's stdin relay does not pass on at once).
	a := startNestedB(t, e, e.workdir, fmt.Sprintf(`echo up; while read c; do case $c in
swap) mv sub sub.aside && ln -s %s sub && echo swapped;;
back) rm sub && mv sub.aside sub && echo restored;;
*) exit 0;;
esac; done`, canary), " (session A)")
	t.Cleanup(func() { a.finish(t) })
	tell := func(cmd, want string) func(*testing.T) {
		return func(t *testing.T) {
			if _, err := a.in.Write([]byte(cmd + "\n")); err != nil {
				t.Errorf("session A: %v", err)
				return
			}
			line := make(chan string, 1)
			go func() { l, _ := a.out.ReadString('\n'); line <- l }()
			select {
			case l := <-line:
				if strings.TrimSpace(l) != want {
					t.Errorf("session A's agent said %q, want %s\n%s", l, want, a.stderr.Bytes())
				}
			case <-time.After(30 * time.Second):
				t.Errorf("session A's agent did not say %s within 30s", want)
			}
			var st unix.Stat_t
			if unix.Lstat(sub, &st) == nil {
				t.Logf("session A's agent: %s; %s is uid %d on disk (mode %#o)", want, sub, st.Uid, st.Mode)
			}
		}
	}
	return swapPlan{wd: sub, canary: canary, canaryAfter: canary, in: tell("swap", "swapped"), back: tell("back", "restored"), intended: sub + ".aside", intendedBack: sub}
}

// swapParentByUser: swapUserUID owns work/; root's workdir is
// work/p/cron.d. The user replaces work/p with a link to the canary's
// parent: only the last component was ever checked for a link.
func swapParentByUser(t *testing.T, e *env) swapPlan {
	must(t, os.Chown(e.workdir, swapUserUID, swapUserUID))
	wd := filepath.Join(e.workdir, "p", "cron.d")
	must(t, os.MkdirAll(wd, 0o755))
	canary := makeCanary(t, e, filepath.Join("sys", "etc", "cron.d"), 0)
	p := filepath.Join(e.workdir, "p")
	return swapPlan{wd: wd, canary: canary, canaryAfter: canary,
		in:       asUser(swapUserUID, fmt.Sprintf("mv %s %s.aside && ln -s %s %s", p, p, filepath.Dir(canary), p)),
		back:     asUser(swapUserUID, fmt.Sprintf("rm %s && mv %s.aside %s", p, p, p)),
		intended: filepath.Join(p+".aside", "cron.d"), intendedBack: wd}
}

// swapDirByUser: swapUserUID owns work/, where root keeps its workdir sub
// and another folder of its own, other (the canary). The user renames
// other into sub's place: no link anywhere, another folder.
func swapDirByUser(t *testing.T, e *env) swapPlan {
	must(t, os.Chown(e.workdir, swapUserUID, swapUserUID))
	sub := filepath.Join(e.workdir, "sub")
	must(t, os.Mkdir(sub, 0o755))
	other := filepath.Join(e.workdir, "other")
	must(t, os.Mkdir(other, 0o755))
	must(t, os.WriteFile(filepath.Join(other, "MARKER"), []byte("CANARY-MARKER\n"), 0o644))
	return swapPlan{wd: sub, canary: other, canaryAfter: sub,
		in:       asUser(swapUserUID, fmt.Sprintf("mv %s %s.aside && mv %s %s", sub, sub, other, sub)),
		intended: sub + ".aside"}
}

// swapToHomeConfig: an unprivileged caller's workdir work/sub; its other
// session's agent (same uid) links it to the caller's
// ~/.config/systemd/user, which rule workdir-home-config refuses as a
// workdir: a unit written there runs at the next login. (Its init clones
// the source and looks at the mount point microseconds apart: no hold
// point between, so the link stays.)
func swapToHomeConfig(t *testing.T, e *env) swapPlan {
	sub := filepath.Join(e.workdir, "sub")
	must(t, os.Mkdir(sub, 0o755))
	must(t, os.Chown(sub, agentUID, agentUID))
	canary := makeCanary(t, e, filepath.Join("home", ".config", "systemd", "user"), agentUID)
	return swapPlan{wd: sub, canary: canary, canaryAfter: canary,
		in:       asUser(agentUID, fmt.Sprintf("mv %s %s.aside && ln -s %s %s", sub, sub, canary, sub)),
		intended: sub + ".aside"}
}

// makeCanary makes rel under e.base, each folder owned by uid, with a
// marker file the agent must never see.
func makeCanary(t *testing.T, e *env, rel string, uid int) string {
	t.Helper()
	c := filepath.Join(e.base, rel)
	must(t, os.MkdirAll(c, 0o755))
	must(t, os.WriteFile(filepath.Join(c, "MARKER"), []byte("CANARY-MARKER\n"), 0o644))
	for d := c; d != e.base; d = filepath.Dir(d) {
		must(t, os.Chown(d, uid, uid))
	}
	must(t, os.Chown(filepath.Join(c, "MARKER"), uid, uid))
	return c
}

// asUser returns a swap that runs script as uid.
func asUser(uid int, script string) func(*testing.T) {
	return func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		id := strconv.Itoa(uid)
		out, err := exec.CommandContext(ctx, "setpriv", "--reuid", id, "--regid", id, "--clear-groups", "sh", "-c", script).CombinedOutput()
		if err != nil {
			t.Errorf("swap as uid %d: %v: %s", uid, err, out)
		}
	}
}

// names lists dir (nil when it cannot be read).
func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, d := range ents {
		out = append(out, d.Name())
	}
	return out
}

// runHeldSession runs session B (workdir sp.wd, an agent that lists its
// workdir and writes probe there): sp.in runs while fedmem-run is held in
// its open of the session folder it made (createInbox: after the plan,
// before the backend) or, with sp.atHelper, at the exec of the container
// backend's helper; sp.back while the sandbox's init is held at its
// exec (a process of a new pid namespace executing fedmem-run). It
// returns how many of the two steps ran.
func runHeldSession(t *testing.T, e *env, sp swapPlan) (*run, int) {
	t.Helper()
	inbox := filepath.Join(e.vault.Dir, "90-inbox")
	var pid atomic.Int64
	var fired atomic.Int32
	var made atomic.Bool // fedmem-run opened the session folder it made
	marks := []fanMark{
		{path: inbox, mask: unix.FAN_OPEN_PERM | unix.FAN_ONDIR | unix.FAN_EVENT_ON_CHILD},
		{path: e.bins.FedmemRun, mask: unix.FAN_OPEN_EXEC_PERM},
	}
	helper := filepath.Join(filepath.Dir(e.bins.FedmemRun), "fedmem-"+testutil.Backend())
	if sp.atHelper {
		marks = append(marks, fanMark{path: helper, mask: unix.FAN_OPEN_EXEC_PERM})
	}
	stop := holdOpens(t, marks, func(mask uint64, p int, path string) {
		atInbox := mask&unix.FAN_OPEN_PERM != 0 && int64(p) == pid.Load() && filepath.Dir(path) == inbox && filepath.Base(path) != ".sessions"
		made.Store(made.Load() || atInbox)
		switch {
		case fired.Load() == 0 && !sp.atHelper && atInbox:
			sp.in(t)
			fired.Store(1)
			t.Logf("swapped while fedmem-run (pid %d) was held in its open of %s", p, path)
		case fired.Load() == 0 && sp.atHelper && made.Load() && mask&unix.FAN_OPEN_EXEC_PERM != 0 && path == helper:
			sp.in(t)
			fired.Store(1)
			t.Logf("swapped while pid %d was held at its exec of %s", p, path)
		case fired.Load() == 1 && sp.back != nil && mask&unix.FAN_OPEN_EXEC_PERM != 0 && inNewPidNS(p):
			sp.back(t)
			fired.Store(2)
			t.Logf("put back while pid %d (a new pid namespace's init) was held at its exec of %s", p, path)
		}
	})
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := e.command(ctx, "", []string{"--workdir", sp.wd}, "sh", "-c", "ls -a; cat MARKER; echo planted > probe && echo wrote")
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	must(t, cmd.Start())
	pid.Store(int64(cmd.Process.Pid)) // setpriv execs fedmem-run: the same pid
	err := cmd.Wait()
	if ctx.Err() != nil {
		t.Fatalf("fedmem-run timed out\nstderr:\n%s", se.Bytes())
	}
	return &run{stdout: so.Bytes(), stderr: se.Bytes(), code: exitCode(err)}, int(fired.Load())
}

// inNewPidNS reports whether process pid is in a pid namespace below
// this one (its NSpid has more than one entry).
func inNewPidNS(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f, ok := strings.CutPrefix(l, "NSpid:"); ok {
			return len(strings.Fields(f)) > 1
		}
	}
	return false
}

// fanMark is one fanotify mark: an inode and its events.
type fanMark struct {
	path string
	mask uint64
}

// holdOpens answers, through fanotify permission marks, every open (or
// exec) of what marks name; act, given the event's mask, the opener's pid
// and the path opened, runs before the answer (the opener waits). The
// returned stop ends the marks: the kernel lets any open still waiting
// through.
func holdOpens(t *testing.T, marks []fanMark, act func(mask uint64, pid int, path string)) (stop func()) {
	t.Helper()
	fd, err := unix.FanotifyInit(unix.FAN_CLASS_CONTENT|unix.FAN_CLOEXEC|unix.FAN_NONBLOCK, unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		t.Fatalf("fanotify_init (permission events; CONFIG_FANOTIFY_ACCESS_PERMISSIONS): %v", err)
	}
	for _, m := range marks {
		if err := unix.FanotifyMark(fd, unix.FAN_MARK_ADD, m.mask, unix.AT_FDCWD, m.path); err != nil {
			unix.Close(fd)
			t.Fatalf("fanotify_mark %s: %v", m.path, err)
		}
	}
	var done atomic.Bool
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		buf := make([]byte, 4096)
		for !done.Load() {
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			if n, _ := unix.Poll(pfd, 50); n <= 0 {
				continue
			}
			n, err := unix.Read(fd, buf)
			if err != nil {
				if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
					continue
				}
				return
			}
			for off := 0; off+int(unsafe.Sizeof(unix.FanotifyEventMetadata{})) <= n; {
				md := (*unix.FanotifyEventMetadata)(unsafe.Pointer(&buf[off]))
				if md.Vers != unix.FANOTIFY_METADATA_VERSION || md.Event_len == 0 {
					return
				}
				off += int(md.Event_len)
				if md.Fd < 0 {
					continue
				}
				if md.Mask&(unix.FAN_OPEN_PERM|unix.FAN_OPEN_EXEC_PERM) != 0 {
					path, _ := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", md.Fd))
					act(md.Mask, int(md.Pid), path)
					resp := unix.FanotifyResponse{Fd: md.Fd, Response: unix.FAN_ALLOW}
					_, _ = unix.Write(fd, (*[unsafe.Sizeof(resp)]byte)(unsafe.Pointer(&resp))[:])
				}
				unix.Close(int(md.Fd))
			}
		}
	}()
	return func() {
		done.Store(true)
		<-ended
		unix.Close(fd)
	}
}
