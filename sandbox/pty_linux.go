package sandbox

import (
	"io"
	"os"
	"os/signal"
	"sync"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// ptyRelay gives the agent a private pseudo-terminal and relays it to the
// user's terminal, so the agent never holds the user's terminal (no
// TIOCSTI on it, no reading another program's input from it).
type ptyRelay struct {
	in, out  *os.File
	master   *os.File
	slave    *os.File
	oldState *term.State
	winch    chan os.Signal
	outDone  chan struct{}
	once     sync.Once
	mu       sync.Mutex
}

func newPTYRelay(in, out *os.File) (*ptyRelay, error) {
	master, slave, err := pty.Open()
	if err != nil {
		return nil, err
	}
	r := &ptyRelay{in: in, out: out, master: master, slave: slave, outDone: make(chan struct{})}
	_ = pty.InheritSize(in, master)
	// Copy the user's line settings so the agent sees the same terminal.
	if t, err := unix.IoctlGetTermios(int(in.Fd()), unix.TCGETS); err == nil {
		_ = unix.IoctlSetTermios(int(slave.Fd()), unix.TCSETS, t)
	}
	return r, nil
}

// Start puts the user's terminal in raw mode and starts copying.
func (r *ptyRelay) Start(init *os.Process) {
	r.makeRaw()
	r.winch = make(chan os.Signal, 4)
	signal.Notify(r.winch, unix.SIGWINCH, unix.SIGCONT)
	go func() {
		for s := range r.winch {
			if s == unix.SIGCONT {
				// Back in the foreground after a suspend: raw again, and
				// wake the agent.
				r.makeRaw()
				_ = init.Signal(unix.SIGCONT)
			}
			_ = pty.InheritSize(r.in, r.master)
		}
	}()
	go func() { _, _ = io.Copy(r.master, r.in) }()
	go func() {
		_, _ = io.Copy(r.out, r.master)
		close(r.outDone)
	}()
}

func (r *ptyRelay) makeRaw() {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, err := term.MakeRaw(int(r.in.Fd()))
	if err == nil && r.oldState == nil {
		r.oldState = st
	}
}

func (r *ptyRelay) restore() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.oldState != nil {
		_ = term.Restore(int(r.in.Fd()), r.oldState)
	}
}

// Suspend is called when the agent was stopped by Ctrl-Z: give the terminal
// back to the user's shell and stop fedmem-run itself; SIGCONT resumes.
func (r *ptyRelay) Suspend(init *os.Process) {
	r.restore()
	_ = unix.Kill(os.Getpid(), unix.SIGSTOP)
}

// Finish drains the agent's last output and restores the terminal.
func (r *ptyRelay) Finish() {
	// Every slave fd is closed once the sandbox is gone: the master then
	// reads EIO and the copy ends.
	<-r.outDone
	r.restore()
}

// Close releases the terminal state and the pty.
func (r *ptyRelay) Close() {
	r.once.Do(func() {
		if r.winch != nil {
			signal.Stop(r.winch)
			close(r.winch)
		}
		r.restore()
		if r.slave != nil {
			r.slave.Close()
		}
		r.master.Close()
	})
}
