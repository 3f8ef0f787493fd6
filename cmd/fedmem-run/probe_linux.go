package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/sandbox"
	"github.com/fedmem/fedmem/sandbox/cgroups"
	"github.com/fedmem/fedmem/sandbox/landlock"
)

// nobody is the uid/gid the root probe uses to test unprivileged user
// namespaces.
const nobody = 65534

func runProbe() *Probe {
	p := &Probe{UID: os.Getuid(), Arch: runtime.GOARCH, Sysctls: map[string]string{}, ContainerHints: []string{}}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		p.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	for _, s := range []string{"kernel/unprivileged_userns_clone", "user/max_user_namespaces", "kernel/apparmor_restrict_unprivileged_userns"} {
		if b, err := os.ReadFile("/proc/sys/" + s); err == nil {
			p.Sysctls[strings.ReplaceAll(s, "/", ".")] = strings.TrimSpace(string(b))
		}
	}
	if err := tryUserns(); err != nil {
		p.UsernsError = err.Error()
	} else {
		p.Userns = true
	}
	if os.Geteuid() == 0 {
		ok, err := tryUsernsAs(nobody)
		p.UsernsUnprivileged = ok
		if err != nil {
			p.UsernsUnprivilegedError = err.Error()
		}
	} else {
		ok := p.Userns
		p.UsernsUnprivileged = &ok
		p.UsernsUnprivilegedError = p.UsernsError
	}
	p.LandlockABI = landlock.ABI()
	p.Seccomp, p.SeccompMode, p.SeccompError = probeSeccomp()
	p.Cgroup = probeCgroup()
	for _, s := range cgroups.System().Probe() {
		p.Cgroup.Limits = append(p.Cgroup.Limits, CgroupLimit(s))
	}
	p.Container, p.ContainerHints = probeContainer()
	p.Agent = probeAgent()
	return p
}

// probeAgent says who this caller's agent would be and whether its
// writable binds keep their owner (guarantee 5).
func probeAgent() AgentFacts {
	a := AgentFacts{ExtraGroups: []int{}}
	uid, gid, src, err := sandbox.ChooseAgent(os.Getuid(), os.Getgid(), sandbox.AgentChoice{SudoUID: os.Getenv("SUDO_UID"), SudoGID: os.Getenv("SUDO_GID")}, func(name string) (int, int, error) {
		u, err := user.Lookup(name)
		if err != nil {
			return 0, 0, err
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		return uid, gid, nil
	})
	a.UID, a.GID, a.Source = uid, gid, src
	if err != nil {
		a.Error = err.Error()
	}
	groups, _ := unix.Getgroups()
	for _, g := range groups {
		if g != os.Getegid() {
			a.ExtraGroups = append(a.ExtraGroups, g)
		}
	}
	a.Newgidmap, _ = exec.LookPath("newgidmap")
	a.Subgid = sandbox.HasSubgid(os.Getuid())
	if os.Geteuid() == 0 {
		if wd, err := os.Getwd(); err == nil {
			a.IdmapDir = wd
			if err := sandbox.ProbeIdmap(wd); err != nil {
				a.IdmapError = err.Error()
			} else {
				a.Idmap = true
			}
		}
	}
	return a
}

// tryUserns starts a child of this binary in a new user namespace (a real
// clone(CLONE_NEWUSER), as the sandbox does) and waits for it.
func tryUserns() error {
	cmd := exec.Command("/proc/self/exe", probeNoopArg)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("clone(CLONE_NEWUSER): %w %s", err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// tryUsernsAs runs tryUserns in a child with uid (and gid) id. The result
// is nil when the test itself could not run (the binary is not executable
// by that uid, for example).
func tryUsernsAs(id int) (*bool, error) {
	cmd := exec.Command("/proc/self/exe", probeAsUserArg)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(id), Gid: uint32(id), Groups: []uint32{}}}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	yes, no := true, false
	if err == nil {
		return &yes, nil
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 {
		return &no, fmt.Errorf("as uid %d: %s", id, strings.TrimSpace(stderr.String()))
	}
	return nil, fmt.Errorf("could not test as uid %d: %w", id, err)
}

func probeSeccomp() (ok bool, mode int, detail string) {
	if st, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, l := range strings.Split(string(st), "\n") {
			if v, found := strings.CutPrefix(l, "Seccomp:"); found {
				mode, _ = strconv.Atoi(strings.TrimSpace(v))
			}
		}
	}
	if _, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0); err != nil {
		return false, mode, fmt.Sprintf("prctl(PR_GET_SECCOMP): %v (kernel without CONFIG_SECCOMP)", err)
	}
	if _, err := os.Stat("/proc/sys/kernel/seccomp/actions_avail"); err != nil {
		return false, mode, fmt.Sprintf("no seccomp filter support: %v", err)
	}
	return true, mode, ""
}

func probeCgroup() Cgroup {
	const root = "/sys/fs/cgroup"
	cg := Cgroup{Version: "none", Controllers: []string{}}
	var fs unix.Statfs_t
	if err := unix.Statfs(root, &fs); err != nil {
		cg.Detail = fmt.Sprintf("%s: %v", root, err)
		return cg
	}
	own := map[string]string{} // hierarchy ("" for v2) → path
	if f, err := os.Open("/proc/self/cgroup"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			parts := strings.SplitN(sc.Text(), ":", 3)
			if len(parts) == 3 {
				for _, c := range strings.Split(parts[1], ",") {
					own[c] = parts[2]
				}
			}
		}
		f.Close()
	}
	if fs.Type == unix.CGROUP2_SUPER_MAGIC {
		cg.Version = "v2"
		cg.Path = own[""]
		dir := filepath.Join(root, cg.Path)
		if b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers")); err == nil {
			for _, c := range strings.Fields(string(b)) {
				if c == "pids" || c == "memory" || c == "cpu" {
					cg.Controllers = append(cg.Controllers, c)
				}
			}
		}
		cg.Writable = writableDir(dir)
		if !cg.Writable {
			cg.Detail = fmt.Sprintf("cannot create a cgroup under %s (not delegated to uid %d)", dir, os.Geteuid())
		}
		return cg
	}
	cg.Version = "v1"
	if _, err := os.Stat(filepath.Join(root, "unified", "cgroup.procs")); err == nil {
		cg.Version = "hybrid"
	}
	cg.Path = own["pids"]
	var notW []string
	for _, c := range []string{"pids", "memory"} {
		dir := filepath.Join(root, c)
		if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err != nil {
			continue
		}
		cg.Controllers = append(cg.Controllers, c)
		if !writableDir(dir) {
			notW = append(notW, dir)
		}
	}
	cg.Writable = len(cg.Controllers) > 0 && len(notW) == 0
	if len(notW) > 0 {
		cg.Detail = fmt.Sprintf("uid %d cannot create cgroups in %s", os.Geteuid(), strings.Join(notW, ", "))
	}
	return cg
}

// writableDir: dir is on a read-write mount and the caller may create
// entries in it.
func writableDir(dir string) bool {
	var vfs unix.Statfs_t
	if unix.Statfs(dir, &vfs) != nil || vfs.Flags&unix.ST_RDONLY != 0 {
		return false
	}
	return unix.Access(dir, unix.W_OK|unix.X_OK) == nil
}

func probeContainer() (string, []string) {
	kind, hints := "", []string{}
	set := func(k, hint string) {
		if kind == "" {
			kind = k
		}
		hints = append(hints, hint)
	}
	if _, err := os.Stat("/.dockerenv"); err == nil {
		set("docker", "/.dockerenv exists")
	}
	if _, err := os.Stat("/run/.containerenv"); err == nil {
		set("podman", "/run/.containerenv exists")
	}
	if b, err := os.ReadFile("/proc/1/environ"); err == nil {
		for _, kv := range bytes.Split(b, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte("container=")); ok && len(v) > 0 {
				set(string(v), "pid 1 has container="+string(v))
			}
		}
	}
	if b, err := os.ReadFile("/proc/1/cgroup"); err == nil {
		s := string(b)
		for _, k := range []string{"docker", "kubepods", "containerd", "lxc", "libpod"} {
			if strings.Contains(s, "/"+k) {
				set(k, "/proc/1/cgroup mentions "+k)
			}
		}
	}
	return kind, hints
}
