package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// backendChecks say, per sandbox backend, what enforces the sandbox and
// whether its pieces are here: the helper beside fedmem-run (fedmem does
// not link the backends; it asks the helpers), runc for containerd's shim,
// the daemon answering. A missing container backend is a warning: the
// namespace backend is the default.
func backendChecks(runner, ctrdAddr string) []doctorCheck {
	dir := filepath.Dir(runner)
	out := []doctorCheck{{Name: "backend namespace", Status: statusOK,
		Detail: "the default: fedmem-run makes the namespaces, the root and the session cgroup itself; fedmem's init verifies the mounts and applies Landlock, seccomp, no_new_privs, the capability drop and the PTY (the checks above)"}}
	root := os.Geteuid() == 0
	const initToo = "fedmem's init inside still verifies the mounts and applies Landlock, seccomp (fedmem's rules), no_new_privs, the capability drop and the private PTY"

	// runc: libcontainer inside fedmem-runc; no runc binary needed.
	runc := doctorCheck{Name: "backend runc"}
	if v, err := helperOutput(filepath.Join(dir, "fedmem-runc"), "version"); err != nil {
		runc.Status, runc.Detail = statusWarn, "--backend runc cannot run: "+err.Error()
		runc.Fix = "build fedmem-runc beside fedmem-run (make build; needs cgo and libseccomp-dev)"
	} else if !root {
		runc.Status, runc.Detail = statusWarn, v+": --backend runc needs root (uid "+fmt.Sprint(os.Geteuid())+")"
		runc.Fix = "run fedmem-run as root for the runc backend, or use the namespace backend"
	} else {
		runc.Status, runc.Detail = statusOK, v+": namespaces, root, mounts and cgroup limits (pids, memory, cpu) by libcontainer; "+initToo
	}
	out = append(out, runc)

	// containerd: the daemon over the helper's client, its shim runs runc.
	if ctrdAddr == "" {
		ctrdAddr = os.Getenv("CONTAINERD_ADDRESS")
	}
	if ctrdAddr == "" {
		ctrdAddr = "/run/containerd/containerd.sock"
	}
	ctr := doctorCheck{Name: "backend containerd"}
	runcBin, runcErr := exec.LookPath("runc")
	var runcVersion string
	if runcErr == nil {
		runcVersion, runcErr = helperOutput(runcBin, "--version")
	}
	switch {
	case runcErr != nil:
		ctr.Status, ctr.Detail = statusWarn, "--backend containerd cannot run: no runc for containerd's shim: "+runcErr.Error()
		ctr.Fix = "install runc (apt-get install runc) in containerd's PATH"
	default:
		if _, err := os.Stat(ctrdAddr); err != nil {
			ctr.Status, ctr.Detail = statusWarn, "--backend containerd cannot run: no containerd socket at "+ctrdAddr+": "+err.Error()
			ctr.Fix = "start containerd, or name its socket: fedmem doctor --containerd-address SOCK (fedmem-run --containerd-address)"
			break
		}
		v, err := helperOutput(filepath.Join(dir, "fedmem-containerd"), "version", "--address", ctrdAddr)
		switch {
		case err != nil:
			ctr.Status, ctr.Detail = statusWarn, "--backend containerd cannot run: "+err.Error()
			ctr.Fix = "build fedmem-containerd beside fedmem-run (make build), and check that containerd answers at " + ctrdAddr
		case !root:
			ctr.Status, ctr.Detail = statusWarn, v+": --backend containerd needs root (uid "+fmt.Sprint(os.Geteuid())+")"
			ctr.Fix = "run fedmem-run as root for the containerd backend, or use the namespace backend"
		default:
			ctr.Status, ctr.Detail = statusOK, v+"; "+firstLine(runcVersion)+" for its shim: namespaces, root, mounts and cgroup limits by runc under containerd's shim; "+initToo
		}
	}
	return append(out, ctr)
}

// helperOutput runs a helper briefly and returns its first line, or an
// error with what it said.
func helperOutput(bin string, args ...string) (string, error) {
	if _, err := os.Stat(bin); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("%s %s: %s", filepath.Base(bin), strings.Join(args, " "), firstLine(msg))
	}
	return firstLine(stdout.String()), nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}
