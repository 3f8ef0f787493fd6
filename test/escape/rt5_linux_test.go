package escape

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/test/testutil"
)

// rt5Hold runs session B (workdir wd, agent argv) under fanotify holds:
// in runs while the container helper is held at its exec (after
// fedmem-run's pin.CheckAll) or, on the namespace backend, while
// fedmem-run is held at its open of the session folder; back runs while
// the sandbox's init (a new pid namespace's process) is held at its exec
// of fedmem-run — after the runtime made every mount, before the init's
// pin.CheckMounted. It returns the run and how many steps fired.
func rt5Hold(t *testing.T, e *env, extra []string, in, back func(*testing.T), argv ...string) (*run, int) {
	t.Helper()
	inbox := filepath.Join(e.vault.Dir, "90-inbox")
	var pid atomic.Int64
	var fired atomic.Int32
	var made atomic.Bool
	container := testutil.Backend() != "namespace"
	helper := filepath.Join(filepath.Dir(e.bins.FedmemRun), "fedmem-"+testutil.Backend())
	marks := []fanMark{
		{path: inbox, mask: unix.FAN_OPEN_PERM | unix.FAN_ONDIR | unix.FAN_EVENT_ON_CHILD},
		{path: e.bins.FedmemRun, mask: unix.FAN_OPEN_EXEC_PERM},
	}
	if container {
		marks = append(marks, fanMark{path: helper, mask: unix.FAN_OPEN_EXEC_PERM})
	}
	stop := holdOpens(t, marks, func(mask uint64, p int, path string) {
		atInbox := mask&unix.FAN_OPEN_PERM != 0 && int64(p) == pid.Load() && filepath.Dir(path) == inbox && filepath.Base(path) != ".sessions"
		made.Store(made.Load() || atInbox)
		switch {
		case fired.Load() == 0 && !container && atInbox:
			in(t)
			fired.Store(1)
			t.Logf("step 1 while fedmem-run (pid %d) was held in its open of %s", p, path)
		case fired.Load() == 0 && container && made.Load() && mask&unix.FAN_OPEN_EXEC_PERM != 0 && path == helper:
			in(t)
			fired.Store(1)
			t.Logf("step 1 while pid %d was held at its exec of %s", p, path)
		case fired.Load() == 1 && back != nil && mask&unix.FAN_OPEN_EXEC_PERM != 0 && inNewPidNS(p):
			back(t)
			fired.Store(2)
			t.Logf("step 2 while pid %d (a new pid namespace's process) was held at its exec of %s", p, path)
		}
	})
	defer stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := e.command(ctx, "", extra, argv...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	must(t, cmd.Start())
	pid.Store(int64(cmd.Process.Pid))
	err := cmd.Wait()
	if ctx.Err() != nil {
		t.Fatalf("fedmem-run timed out\nstderr:\n%s", se.Bytes())
	}
	return &run{stdout: so.Bytes(), stderr: se.Bytes(), code: exitCode(err)}, int(fired.Load())
}

// TestRT5RuntimeMountFollowsRename: swapUserUID owns work/, where a root
// caller keeps its workdir sub and another folder of root's, other. At
// the container helper's exec (after pin.CheckAll) the user renames sub
// aside and other into its place: the runtime binds other (by path) at
// sub. At the init's exec (after the runtime's mounts, before
// pin.CheckMounted) the user renames both back — no link anywhere. The
// container's root is the host's / read-only, so the mount point is the
// dentry of other and the mount follows it back to work/other; work/sub
// is the pinned folder again (through the read-only root), so a
// CheckMounted by path (stat of the target) finds the pinned inode.
func TestRT5RuntimeMountFollowsRename(t *testing.T) {
	if testutil.Backend() == "namespace" {
		t.Skip("the namespace backend binds from the descriptors it checked: no runtime binds by path")
	}
	e := setup(t, layout{name: "beside/root"})
	must(t, os.Chown(e.workdir, swapUserUID, swapUserUID))
	sub := filepath.Join(e.workdir, "sub")
	other := filepath.Join(e.workdir, "other")
	must(t, os.Mkdir(sub, 0o755))
	must(t, os.Mkdir(other, 0o755))
	must(t, os.WriteFile(filepath.Join(other, "MARKER"), []byte("CANARY-MARKER\n"), 0o644))
	in := asUser(swapUserUID, fmt.Sprintf("mv %s %s.aside && mv %s %s", sub, sub, other, sub))
	back := asUser(swapUserUID, fmt.Sprintf("mv %s %s && mv %s.aside %s", sub, other, sub, sub))
	r, fired := rt5Hold(t, e, []string{"--workdir", sub}, in, back, "sh", "-c", fmt.Sprintf(
		"pwd; ls -a; cat MARKER; echo planted > probe && echo wrote-cwd; echo planted > %s/probe && echo wrote-other; grep %s /proc/self/mountinfo", other, e.workdir))
	t.Logf("exit %d, fired %d\nstdout:\n%s\nstderr:\n%s", r.code, fired, r.stdout, r.stderr)
	if fired < 2 {
		t.Fatalf("the swap ran %d of 2 steps: the test proves nothing", fired)
	}
	for _, p := range []string{filepath.Join(other, "probe"), filepath.Join(sub, "probe")} {
		st, err := os.Lstat(p)
		if err != nil {
			continue
		}
		if p == filepath.Join(other, "probe") || bytes.Contains(r.stdout, []byte("CANARY-MARKER")) {
			t.Errorf("BREACH: root's folder %s written by the agent: %s, uid %d on disk (exit %d)", other, p, st.Sys().(*syscall.Stat_t).Uid, r.code)
		}
	}
	rt5RenameOutcome(t, r, other)
}

// TestRT5WritablePathFollowsRename: as TestRT5RuntimeMountFollowsRename,
// for a profile's writable: path (no .git placeholder below it, so the
// mount verification has nothing to find): swapUserUID owns shared/,
// where root keeps the writable path shared/cache and another folder of
// its own, shared/other. At the helper's exec: cache aside, other in its
// place (the runtime binds other at shared/cache); at the init's exec:
// both back. pin.CheckMounted stats shared/cache: the pinned inode,
// through the read-only root; root's other folder is mounted writable,
// idmapped to root, at shared/other.
func TestRT5WritablePathFollowsRename(t *testing.T) {
	if testutil.Backend() == "namespace" {
		t.Skip("the namespace backend binds from the descriptors it checked: no runtime binds by path")
	}
	e := setup(t, layout{name: "beside/root"})
	shared := filepath.Join(e.base, "shared")
	must(t, os.Mkdir(shared, 0o755))
	must(t, os.Chown(shared, swapUserUID, swapUserUID))
	cache := filepath.Join(shared, "cache")
	other := filepath.Join(shared, "other")
	must(t, os.Mkdir(cache, 0o755))
	must(t, os.Mkdir(other, 0o755))
	must(t, os.WriteFile(filepath.Join(other, "MARKER"), []byte("CANARY-MARKER\n"), 0o644))
	prof := filepath.Join(e.base, "rt5.yaml")
	must(t, os.WriteFile(prof, []byte("name: rt5\nextends: default\nwritable:\n  - "+cache+"\n"), 0o644))
	in := asUser(swapUserUID, fmt.Sprintf("mv %s %s.aside && mv %s %s", cache, cache, other, cache))
	back := asUser(swapUserUID, fmt.Sprintf("mv %s %s && mv %s.aside %s", cache, other, cache, cache))
	r, fired := rt5Hold(t, e, []string{"--profile", prof}, in, back, "sh", "-c", fmt.Sprintf(
		"cat %s/MARKER %s/MARKER; echo planted > %s/probe && echo wrote-cache; echo planted > %s/probe && echo wrote-other; grep %s /proc/self/mountinfo", cache, other, cache, other, shared))
	t.Logf("exit %d, fired %d\nstdout:\n%s\nstderr:\n%s", r.code, fired, r.stdout, r.stderr)
	if fired < 2 {
		t.Fatalf("the swap ran %d of 2 steps: the test proves nothing", fired)
	}
	if st, err := os.Lstat(filepath.Join(other, "probe")); err == nil {
		t.Errorf("BREACH: the agent wrote root's folder %s (not the writable path the plan judged): probe uid %d on disk, exit %d", other, st.Sys().(*syscall.Stat_t).Uid, r.code)
	}
	rt5RenameOutcome(t, r, other)
}

// rt5RenameOutcome: pin.CheckMounted (a stat of the target by path) is
// fooled by the rename back; what refuses the session is the mount
// verification of the .git placeholder, which moved with the runtime's
// mount. The runtime's .git in root's other folder is the open residual
// of the runtime window (FEDMEM_OPEN_BREACHES=1 makes it fail).
func rt5RenameOutcome(t *testing.T, r *run, other string) {
	t.Helper()
	if r.code != 125 {
		t.Errorf("exit %d, want 125 (refused before the agent runs)\n%s", r.code, r.stderr)
	}
	if bytes.Contains(r.stderr, []byte("writable-source-swapped")) {
		t.Logf("refused by pin.CheckMounted: %s", firstLine(r.stderr, "writable-source-swapped"))
	} else {
		t.Logf("pin.CheckMounted passed (stat by path found the pinned inode); refused by: %s", firstLine(r.stderr, "fedmem-run"))
	}
	if ents := names(t, other); len(ents) != 1 {
		if os.Getenv("FEDMEM_OPEN_BREACHES") == "1" {
			t.Errorf("the runtime made mount points in root's other folder: %v (want only MARKER)", ents)
		} else {
			t.Logf("open residual (FEDMEM_OPEN_BREACHES=1 makes it fail): the runtime made mount points in root's other folder: %v", ents)
		}
	}
}
