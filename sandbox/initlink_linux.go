package sandbox

import (
	"encoding/json"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/sandbox/receipts"
)

// initLink is fedmem-run's end of what the sandbox's init speaks through,
// made the same way for every backend (the container backends once kept a
// copy of this set-up): the config pipe, the sync pipe that carries the
// init's messages, with a terminal the socket its PTY master comes back
// on, and with a proxied network the socket it hands every connection to
// its loopback proxy ports (HTTP and SOCKS5) over.
type initLink struct {
	cfgR, cfgW   *os.File
	syncR, syncW *os.File
	ptySock      *os.File  // our end; nil without a terminal
	relay        *ptyRelay // nil without a terminal
	proxyCtl     *os.File  // our end; nil without the proxy
	proposeSock  *os.File  // our end; nil without a workdir proposal
	receiptsSock *os.File  // our end; nil without read receipts
	null         *os.File  // the init's stdio until it has its pty
	// files are the init's descriptors from 3 on: config, sync, then the
	// PTY and proxy sockets' other ends.
	files []*os.File
}

// newInitLink makes the link for spec and sets cfg's proxy descriptor and
// port. Close releases everything it made.
func newInitLink(spec *Spec, cfg *InitConfig) (l *initLink, err error) {
	// Descriptors the caller leaked to us without O_CLOEXEC must not reach
	// the init (and so the agent): a writable fd to a vault file would
	// bypass every mount.
	_ = unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	l = &initLink{}
	defer func() {
		if err != nil {
			l.Close()
			l = nil
		}
	}()
	if l.cfgR, l.cfgW, err = os.Pipe(); err != nil {
		return l, &Error{Code: ExitFedmemError, Stage: mounts.StageSetup, Msg: err.Error()}
	}
	if l.syncR, l.syncW, err = os.Pipe(); err != nil {
		return l, &Error{Code: ExitFedmemError, Stage: mounts.StageSetup, Msg: err.Error()}
	}
	l.files = []*os.File{l.cfgR, l.syncW}
	if spec.TTY {
		// The pty is made inside the sandbox, on its private devpts, so the
		// agent's terminal has a name there (tty, ttyname) and the host's
		// /dev/pts stays out of sight; its master comes back to us over a
		// unix socket (SCM_RIGHTS). The init gets /dev/null until then.
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return l, &Error{Code: ExitFedmemError, Stage: mounts.StagePTY, Msg: err.Error()}
		}
		l.ptySock = os.NewFile(uintptr(fds[0]), "pty-parent")
		l.files = append(l.files, os.NewFile(uintptr(fds[1]), "pty-child"))
		if l.null, err = os.Open(os.DevNull); err != nil {
			return l, &Error{Code: ExitFedmemError, Stage: mounts.StagePTY, Msg: err.Error()}
		}
		l.relay = newPTYRelay(spec.Stdin, spec.Stdout)
	}
	if spec.Plan.Network.Proxied() {
		if spec.Proxy == nil {
			return l, &Error{Code: ExitFedmemError, Stage: mounts.StageNetwork, Msg: "network: " + string(spec.Plan.Network) + " without a proxy"}
		}
		// The sandbox's pid 1 hands each connection made to its loopback
		// proxy ports over this socket (SCM_RIGHTS); no address or path
		// outside the sandbox is reachable from inside.
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return l, &Error{Code: ExitFedmemError, Stage: mounts.StageNetwork, Msg: err.Error()}
		}
		l.proxyCtl = os.NewFile(uintptr(fds[0]), "proxy-parent")
		l.files = append(l.files, os.NewFile(uintptr(fds[1]), "proxy-child"))
		cfg.ProxyFd = 2 + len(l.files)
		cfg.ProxyPort = ProxyPort
	}
	if spec.Plan.ProposedWorkdir() != nil {
		// The init hands the proposal's upper tmpfs back over this
		// socket once it is mounted (mountProposal).
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return l, &Error{Code: ExitFedmemError, Stage: mounts.StageSetup, Msg: err.Error()}
		}
		l.proposeSock = os.NewFile(uintptr(fds[0]), "propose-parent")
		l.files = append(l.files, os.NewFile(uintptr(fds[1]), "propose-child"))
		cfg.ProposeFd = 2 + len(l.files)
	}
	if spec.Receipts == ReceiptsOn || spec.Receipts == ReceiptsRequired {
		// The init hands the vault's mounts over this socket and waits
		// for them to be marked (handOverVault, startRecorder).
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return l, &Error{Code: ExitFedmemError, Stage: mounts.StageSetup, Msg: err.Error()}
		}
		l.receiptsSock = os.NewFile(uintptr(fds[0]), "receipts-parent")
		l.files = append(l.files, os.NewFile(uintptr(fds[1]), "receipts-child"))
		cfg.ReceiptsFd = 2 + len(l.files)
	}
	return l, nil
}

// recorder starts recording the agent's vault reads, once the init runs:
// nil without read receipts. Its finish, once the init is reaped, gives
// the reads.
func (l *initLink) recorder(spec *Spec) *receipts.Recorder {
	if l.receiptsSock == nil {
		return nil
	}
	sock := l.receiptsSock
	l.receiptsSock = nil // the recorder closes it
	tree := ""
	if v := spec.Plan.View; v != nil {
		tree = v.Tree
	}
	return receipts.Start(sock, spec.Plan.Vault, tree, spec.Receipts)
}

// proposal returns, once the init has exited (or sent it), the descriptor
// of a proposed workdir's upper tmpfs: nil without a proposal or when the
// init never mounted it.
func (l *initLink) proposal() <-chan *os.File {
	c := make(chan *os.File, 1)
	if l.proposeSock == nil {
		c <- nil
		return c
	}
	go func() { c <- recvFd(l.proposeSock) }()
	return c
}

// setStdio gives cmd (the init, or the helper that starts it) the
// session's stdio, or /dev/null and a session of its own with a terminal.
func (l *initLink) setStdio(cmd *exec.Cmd, spec *Spec) {
	if l.null == nil {
		cmd.Stdin, cmd.Stdout, cmd.Stderr = spec.Stdin, spec.Stdout, spec.Stderr
		return
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = l.null, l.null, l.null
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setsid = true
}

// sendConfig writes cfg into the config pipe while the init is still
// starting (a config larger than the pipe buffer just completes once it
// reads), once ready (nil: at once) says yes; no means the init gets none.
// Should the init die first, the write fails with EPIPE and the init's own
// error, or its exit status, tells why. The config is encoded at once, while
// the init is cloned and starts (nothing changes cfg after this call), not
// after ready: its encoding (~0.5 ms for a plan of 30 mounts) was on the
// start-up's critical path, between the placeholders and the init's read.
// The bytes are json.Encoder's: the value and a newline.
func (l *initLink) sendConfig(cfg *InitConfig, ready func() bool) {
	go func() {
		b, err := json.Marshal(cfg)
		if err == nil && (ready == nil || ready()) {
			_, _ = l.cfgW.Write(append(b, '\n'))
		}
		l.cfgW.Close()
	}()
}

// started is called once the init's process exists: our copies of its
// ends are closed (it holds them now), the proxy is served, and the init's
// messages and its PTY master (with a terminal) come on the channels.
func (l *initLink) started(spec *Spec) (msgs <-chan InitMessage, masters <-chan *os.File) {
	l.syncW.Close()
	for _, f := range l.files[2:] {
		f.Close()
	}
	if l.proxyCtl != nil {
		go serveProxy(l.proxyCtl, spec)
	}
	m := make(chan *os.File, 1)
	if l.relay != nil {
		go func() { m <- recvFd(l.ptySock) }()
	}
	return readInit(l.syncR), m
}

// Close releases every descriptor of the link and the PTY relay.
func (l *initLink) Close() {
	if l.relay != nil {
		l.relay.Close()
	}
	for _, f := range append([]*os.File{l.cfgW, l.syncR, l.ptySock, l.proxyCtl, l.proposeSock, l.receiptsSock, l.null}, l.files...) {
		if f != nil {
			f.Close()
		}
	}
}
