package backends

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/sandbox/oci/rootfs"
)

// TestContainerdGCSparesLiveRoots: the host-root clones live in one
// directory for the whole host (/run/fedmem/containerd/roots), while GC
// asks only its own containerd which containers exist. A clone whose
// helper still runs — between its clone and its NewContainer, or using
// another containerd — must survive a GC; one whose helper is gone must
// not. (Before the owner files, a concurrent session's GC detached the
// clone under a starting container: "failed to mount rootfs component …
// no such file or directory", exit 125.)
func TestContainerdGCSparesLiveRoots(t *testing.T) {
	s := prepare(t, "containerd")
	sock := s.args[len(s.args)-1]
	helper := filepath.Join(filepath.Dir(s.bins.FedmemRun), "fedmem-containerd")
	const roots = "/run/fedmem/containerd/roots"
	if err := rootfs.PrivateDir(roots); err != nil {
		t.Fatal(err)
	}
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		t.Fatal(err)
	}
	// A pid that has ended: a child waited for, labelled with its start
	// time as the helper labels itself, so that a later process given the
	// same pid back (pid_max is 32768 here) is not taken for it.
	gone := exec.Command("sleep", "60")
	if err := gone.Start(); err != nil {
		t.Fatal(err)
	}
	goneStart := procStart(t, gone.Process.Pid)
	gone.Process.Kill()
	gone.Wait()
	var b [4]byte
	rand.Read(b[:])
	tag := hex.EncodeToString(b[:])
	live := filepath.Join(roots, "fedmem-gctest-live-"+tag)
	dead := filepath.Join(roots, "fedmem-gctest-dead-"+tag)
	// The dead root is cloned first: the live clone, a recursive copy of
	// "/", then holds a copy of it unless the roots directory is
	// unbindable — and the dead one's directory cannot be removed (EBUSY)
	// while the live one stands (every session's clone held every older
	// one's, and GC never freed them).
	for _, r := range []struct {
		dir string
		pid int
	}{{dead, gone.ProcessState.Pid()}, {live, os.Getpid()}} {
		dir, pid := r.dir, r.pid
		start := goneStart
		if pid == os.Getpid() {
			start = procStart(t, pid)
		}
		label := strconv.Itoa(pid) + "@" + strings.TrimSpace(string(boot)) + "@" + start
		if err := os.WriteFile(dir+".owner", []byte(label), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := rootfs.CloneHostRoot(dir); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = rootfs.Release(dir); _ = os.Remove(dir + ".owner") })
	}
	mounted := func(dir string) bool {
		var st, parent unix.Stat_t
		return unix.Stat(dir, &st) == nil && unix.Stat(roots, &parent) == nil && st.Dev != parent.Dev
	}
	if !mounted(live) || !mounted(dead) {
		t.Fatal("the clones are not mounted")
	}
	if out, err := exec.Command(helper, "gc", "--address", sock, "--namespace", "fedmem").CombinedOutput(); err != nil {
		t.Fatalf("fedmem-containerd gc: %v\n%s", err, out)
	}
	if !mounted(live) {
		t.Errorf("gc detached %s, whose owner (this test, pid %d) still runs", live, os.Getpid())
	}
	if _, err := os.Stat(live + ".owner"); err != nil {
		t.Errorf("gc removed the live root's owner file: %v", err)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("gc left %s, whose owner (pid %d) is gone: %v", dead, gone.ProcessState.Pid(), err)
	}
	if _, err := os.Stat(dead + ".owner"); !os.IsNotExist(err) {
		t.Errorf("gc left the dead root's owner file: %v", err)
	}
}

// procStart is a process's start time (clock ticks since boot, field 22 of
// /proc/PID/stat), as fedmem-containerd records its own in owner labels.
func procStart(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return f[19]
}
