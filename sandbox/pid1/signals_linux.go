package pid1

import (
	"os"
	"slices"

	"github.com/fedmem/fedmem/sandbox"
	"golang.org/x/sys/unix"
)

// forwardedSignals are the signals the sandbox's pid 1 forwards to the
// agent: those fedmem-run forwards to it (ForwardedSignals), and the job
// control and window-size ones a terminal session sends.
var forwardedSignals = append(slices.Clone(sandbox.ForwardedSignals), unix.SIGCONT, unix.SIGWINCH)

// swallowedSignals are the signals pid 1 catches and drops: those the Go
// runtime would otherwise act on — die (SIGHUP, SIGINT, SIGTERM), dump its
// stacks and die (SIGQUIT, SIGABRT, SIGILL, SIGTRAP, SIGSTKFLT, SIGSYS,
// and SIGBUS, SIGFPE, SIGSEGV when sent by a process) — and those it
// leaves at the kernel's default, stop (SIGTSTP, SIGTTIN, SIGTTOU; and
// SIGCONT). Every other signal already has the runtime's handler, which
// drops it when nothing asked for it (SIGUSR1, SIGPIPE, SIGALRM, the real-
// time signals…), so catching them too changed nothing but the start-up
// time: signal.Notify costs a round trip between two locked threads per
// newly enabled signal (runtime.sigenable), about fifty of them for
// "every signal" (issue 9). TestSwallowedSignalsKeepProcessAlive sends
// every signal to a process holding these and checks it neither dies nor
// stops, so a Go release that changes its signal table fails there.
//
// Signals 32-34 are the C library's and the runtime's own (SIGCANCEL,
// SIGSETXID, musl's SIGSYNCCALL): the runtime leaves them at their
// default as before (signal.Notify never installed a handler for them),
// and a pid namespace's init never receives a default-action signal from
// inside its namespace.
var swallowedSignals = []os.Signal{
	unix.SIGHUP, unix.SIGINT, unix.SIGQUIT, unix.SIGILL, unix.SIGTRAP, unix.SIGABRT,
	unix.SIGBUS, unix.SIGFPE, unix.SIGSEGV, unix.SIGTERM, unix.SIGSTKFLT, unix.SIGSYS,
	unix.SIGCONT, unix.SIGTSTP, unix.SIGTTIN, unix.SIGTTOU,
}
