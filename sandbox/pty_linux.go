package sandbox

import (
	"io"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// ptyRelay relays the user's terminal to the agent's private
// pseudo-terminal, so the agent never holds the user's terminal (no
// TIOCSTI on it, no reading another program's input from it).
type ptyRelay struct {
	in, out  *os.File
	master   *os.File
	oldState *term.State
	winch    chan os.Signal
	outDone  chan struct{}
	once     sync.Once
	mu       sync.Mutex
	finished bool // the session is over: never touch the terminal mode again
}

func newPTYRelay(in, out *os.File) *ptyRelay {
	return &ptyRelay{in: in, out: out, outDone: make(chan struct{})}
}

// Start takes the pty master made inside the sandbox, gives it the user's
// line settings and window size, puts the user's terminal in raw mode and
// starts copying.
func (r *ptyRelay) Start(master *os.File, init *os.Process) {
	r.master = master
	if t, err := unix.IoctlGetTermios(int(r.in.Fd()), unix.TCGETS); err == nil {
		_ = unix.IoctlSetTermios(int(master.Fd()), unix.TCSETS, t)
	}
	_ = pty.InheritSize(r.in, master)
	r.makeRaw()
	r.winch = make(chan os.Signal, 4)
	signal.Notify(r.winch, unix.SIGWINCH, unix.SIGCONT)
	go func() {
		for s := range r.winch {
			if s == unix.SIGCONT {
				// Back in the foreground after a suspend: raw again, and
				// wake the agent. The shell may still be restoring the
				// job's saved terminal modes when SIGCONT arrives, so raw
				// mode is applied again shortly after.
				r.makeRaw()
				_ = init.Signal(unix.SIGCONT)
				for _, d := range []time.Duration{100 * time.Millisecond, 500 * time.Millisecond} {
					time.AfterFunc(d, r.makeRaw)
				}
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
	if r.finished {
		return
	}
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

// Finish drains the agent's last output and restores the terminal. Every
// slave fd is closed once the sandbox is gone, so the master reads EIO and
// the copy ends; the timeout only guards against a kernel that disagrees.
func (r *ptyRelay) Finish() {
	select {
	case <-r.outDone:
	case <-time.After(2 * time.Second):
	}
	r.finish()
}

// finish restores the terminal for good.
func (r *ptyRelay) finish() {
	r.mu.Lock()
	r.finished = true
	r.mu.Unlock()
	r.restore()
}

// Close releases the terminal state and the pty.
func (r *ptyRelay) Close() {
	r.once.Do(func() {
		if r.winch != nil {
			signal.Stop(r.winch)
			close(r.winch)
		}
		r.finish()
		if r.master != nil {
			r.master.Close()
		}
	})
}
