package sandbox

import (
	"encoding/json"
	"errors"
	"os"
	"runtime"
	"sync/atomic"

	"github.com/fedmem/fedmem/sandbox/seccomp"
)

// maxDeniedReports bounds the denials the init reports one by one: a
// hostile agent calling mount in a loop must not flood the sync pipe, the
// events file or fedmem-run.
const maxDeniedReports = 256

// applySeccompReporting installs the seccomp filter with a user
// notification listener held by this init (pid 1) and serves it: each
// refused call is answered with the rule's errno — decided from the
// kernel's seccomp_data by the errno filter itself, never from memory the
// agent controls — and reported on the sync pipe. Where the kernel has no
// listener with TSYNC (before Linux 5.7) it installs the plain errno
// filter and says in a layer note that refusals are not reported.
func applySeccompReporting(cfg *initConfig, l *Layers, sync *os.File) error {
	d, err := seccomp.NewDecider(runtime.GOARCH)
	if err != nil {
		return err
	}
	fd, err := seccomp.ApplyNotify()
	if errors.Is(err, seccomp.ErrNoListener) {
		l.Notes = append(l.Notes, "denied system calls are not reported: "+err.Error())
		return applySeccomp(cfg, l)
	}
	if err != nil {
		return err
	}
	l.Seccomp = true
	l.Notes = append(l.Notes, "denied system calls reported (seccomp user notification held by pid 1)")
	var n atomic.Int64
	go func() {
		// Its own thread: the agent's refused call waits for this answer.
		runtime.LockOSThread()
		seccomp.Serve(fd, d, func(pid int, den seccomp.Denial) {
			k := n.Add(1)
			if k > maxDeniedReports+1 {
				return
			}
			m := &Denied{Kind: "syscall", Syscall: den.Syscall, Rule: den.Rule, Errno: den.Errno, Args: den.Args[:], Pid: pid, Hint: denialHint(den.Rule)}
			if k == maxDeniedReports+1 {
				m = &Denied{Kind: "syscall", Truncated: true, Hint: "more system calls were refused; only the first 256 are reported"}
			}
			// One write per message, below PIPE_BUF: atomic beside the
			// init's own messages on the same pipe.
			_ = json.NewEncoder(sync).Encode(initMessage{Type: msgDenied, Denial: m})
		})
	}()
	return nil
}
