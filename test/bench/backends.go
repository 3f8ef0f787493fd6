package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/fedmem/fedmem/sandbox/seccomp"
	"github.com/fedmem/fedmem/test/testutil"
)

// benchBackends (-only backends) measures the container backends against
// their runtimes' own command lines, each with /bin/true (or a static
// /true in an image), target ≤ 1.0× each:
//
//	runc:       fedmem-run --backend runc against `runc run` of a bundle of
//	            the same shape: the host's / bound read-only as the root, the
//	            same namespaces (user, mount, pid, ipc, uts, cgroup, net), no
//	            capability, no_new_privs, fedmem's seccomp rules as OCI
//	            seccomp, the default profile's pids and memory limits;
//	containerd: fedmem-run --backend containerd --image REF against
//	            `ctr run --rm --read-only` of the same image (a real snapshot
//	            of an image imported from a local OCI archive) with fedmem's
//	            seccomp rules as its profile.
//
// A pair whose pieces are missing (root, runc, a containerd socket, the
// helpers) is skipped and the reason printed. Container runs are slow:
// at most 20 timed and 3 warm-up runs each.
func benchBackends(o options, res *Result, runBin, v, work string, log io.Writer) error {
	o.runs, o.warmup = min(o.runs, 20), min(o.warmup, 3)
	sc, err := seccomp.OCI(runtime.GOARCH)
	if err != nil {
		return fmt.Errorf("seccomp.OCI: %w", err)
	}
	if err := benchRunc(o, res, runBin, v, work, sc, log); err != nil {
		return err
	}
	return benchContainerd(o, res, runBin, v, work, sc, log)
}

func skipPair(res *Result, log io.Writer, what string, why error) {
	res.Skipped = append(res.Skipped, what+": "+why.Error())
	fmt.Fprintf(log, "bench: skipping %s: %v\n", what, why)
}

// needs checks what a pair needs: root, programs in PATH, files.
func needs(progs []string, files ...string) error {
	if os.Geteuid() != 0 {
		return errors.New("needs root (the container backends refuse other callers)")
	}
	for _, p := range progs {
		if _, err := exec.LookPath(p); err != nil {
			return fmt.Errorf("%s not in PATH", p)
		}
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return err
		}
	}
	return nil
}

func benchRunc(o options, res *Result, runBin, v, work string, sc *specs.LinuxSeccomp, log io.Writer) error {
	const what = "runc backend vs runc run"
	if err := needs([]string{"runc", "unshare", "sh"}, filepath.Join(filepath.Dir(runBin), "fedmem-runc")); err != nil {
		skipPair(res, log, what, err)
		return nil
	}
	if out, err := exec.Command("runc", "--version").Output(); err == nil {
		res.Host["runc"] = firstLine(string(out))
	}
	bundle, err := os.MkdirTemp("", "fedmem-bench-runc-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(bundle)
	if err := os.Mkdir(filepath.Join(bundle, "rootfs"), 0o755); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(runcAnchorSpec(sc), "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(bundle, "config.json"), raw, 0o644); err != nil {
		return err
	}
	fr := &Series{Name: "fedmem-run --backend runc", Cmd: []string{runBin, "--vault", v, "--workdir", work, "--network", "none", "--backend", "runc", "--", "/bin/true"}}
	// The root is bound in a mount namespace of its own, as fedmem-runc
	// clones it in its own: nothing reaches the host's mount table.
	rr := &Series{Name: "runc run (same bundle shape)", Cmd: []string{"unshare", "--mount", "--propagation", "slave", "sh", "-c",
		`mount --rbind / "$1/rootfs" && exec runc --root "$1/state" run --bundle "$1" fedmem-bench`, "sh", bundle}}
	fmt.Fprintf(log, "bench: %s, %d warm-up + %d timed runs each…\n", what, o.warmup, o.runs)
	if err := alternate(o, work, fr, rr); err != nil {
		return err
	}
	res.Series = append(res.Series, fr, rr)
	r := ratio("runc backend / runc run", fr, rr, 1.0)
	r.Note = "fedmem adds: its helper exec, the plan and its translation, idmapped binds, its init's verify/Landlock/seccomp/PTY layers"
	res.Ratios = append(res.Ratios, r)
	return nil
}

// runcAnchorSpec is the bundle runc runs for the anchor: what fedmem's
// translation gives the runtime for /bin/true, without fedmem's own binds
// (vault, workdir, inbox) and init.
func runcAnchorSpec(sc *specs.LinuxSeccomp) *specs.Spec {
	pids, mem := int64(4096), int64(8<<30)
	ids := []specs.LinuxIDMapping{{ContainerID: 0, HostID: 0, Size: 65536}}
	return &specs.Spec{
		Version:  specs.Version,
		Root:     &specs.Root{Path: "rootfs", Readonly: true},
		Hostname: "fedmem",
		Process: &specs.Process{
			Args: []string{"/bin/true"}, Cwd: "/", Env: []string{"PATH=/usr/bin:/bin"},
			User:            specs.User{UID: 65534, GID: 65534},
			Capabilities:    &specs.LinuxCapabilities{},
			NoNewPrivileges: true,
		},
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "nodev", "noexec"}},
			{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
			{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}},
			{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "nodev", "mode=1777", "size=65536k"}},
			{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
			{Destination: "/tmp", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "nodev", "mode=1777"}},
		},
		Linux: &specs.Linux{
			Namespaces:  []specs.LinuxNamespace{{Type: "user"}, {Type: "mount"}, {Type: "pid"}, {Type: "ipc"}, {Type: "uts"}, {Type: "cgroup"}, {Type: "network"}},
			UIDMappings: ids, GIDMappings: ids,
			Resources: &specs.LinuxResources{Pids: &specs.LinuxPids{Limit: &pids}, Memory: &specs.LinuxMemory{Limit: &mem}},
			Seccomp:   sc,
			MaskedPaths: []string{"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
				"/proc/timer_stats", "/proc/sched_debug", "/sys/firmware", "/proc/scsi"},
			ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
		},
	}
}

func benchContainerd(o options, res *Result, runBin, v, work string, sc *specs.LinuxSeccomp, log io.Writer) error {
	const what = "containerd backend vs ctr run --rm"
	addr := os.Getenv("FEDMEM_CONTAINERD_ADDRESS")
	if addr == "" {
		addr = os.Getenv("CONTAINERD_ADDRESS")
	}
	if addr == "" {
		addr = "/run/containerd/containerd.sock"
	}
	helper := filepath.Join(filepath.Dir(runBin), "fedmem-containerd")
	if err := needs([]string{"ctr", "runc", "go"}, helper, addr); err != nil {
		skipPair(res, log, what, fmt.Errorf("%w (containerd socket: $FEDMEM_CONTAINERD_ADDRESS, $CONTAINERD_ADDRESS or /run/containerd/containerd.sock)", err))
		return nil
	}
	if out, err := exec.Command(helper, "version", "--address", addr).Output(); err == nil {
		res.Host["containerd"] = firstLine(string(out))
	} else {
		skipPair(res, log, what, fmt.Errorf("containerd at %s does not answer: %v", addr, err))
		return nil
	}
	dir, err := os.MkdirTemp("", "fedmem-bench-ctrd-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// The image: one static /true, built here, imported from a local OCI
	// archive into the fedmem namespace (no registry).
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		return err
	}
	_ = os.WriteFile(filepath.Join(src, "go.mod"), []byte("module benchtrue\n\ngo 1.21\n"), 0o644)
	_ = os.WriteFile(filepath.Join(src, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644)
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "true"), ".")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build the image's /true: %w\n%s", err, out)
	}
	body, err := os.ReadFile(filepath.Join(dir, "true"))
	if err != nil {
		return err
	}
	const ref = "docker.io/fedmem/bench-true:1"
	archive := filepath.Join(dir, "image.tar")
	if err := testutil.OCIArchive(archive, ref, map[string][]byte{"true": body}); err != nil {
		return err
	}
	if out, err := exec.Command(helper, "import", "--address", addr, "--namespace", "fedmem", archive).CombinedOutput(); err != nil {
		return fmt.Errorf("import the bench image: %w\n%s", err, out)
	}
	profile := filepath.Join(dir, "seccomp.json")
	raw, err := json.Marshal(sc)
	if err != nil {
		return err
	}
	if err := os.WriteFile(profile, raw, 0o644); err != nil {
		return err
	}
	fr := &Series{Name: "fedmem-run --backend containerd", Cmd: []string{runBin, "--vault", v, "--workdir", work, "--network", "none",
		"--backend", "containerd", "--containerd-address", addr, "--image", ref, "--", "/true"}}
	cr := &Series{Name: "ctr run --rm (same image)", Cmd: []string{"ctr", "--address", addr, "--namespace", "fedmem", "run", "--rm", "--read-only",
		"--seccomp", "--seccomp-profile", profile, ref, "fedmem-bench-ctr", "/true"}}
	fmt.Fprintf(log, "bench: %s, %d warm-up + %d timed runs each…\n", what, o.warmup, o.runs)
	if err := alternate(o, work, fr, cr); err != nil {
		return err
	}
	res.Series = append(res.Series, fr, cr)
	r := ratio("containerd backend / ctr run", fr, cr, 1.0)
	r.Note = "ctr's container has no user or cgroup namespace; fedmem adds its helper, the plan's binds and its init's layers"
	res.Ratios = append(res.Ratios, r)
	return nil
}
