package durable

import (
	"runtime"

	"golang.org/x/sys/unix"
)

// idlePriority runs the calling goroutine on a thread of its own at the
// lowest CPU priority (nice 19, that thread only): the spare files are
// idle-time work, never to be made at the expense of sessions or of a
// pass. The thread ends with the goroutine (it is never unlocked).
func idlePriority() {
	runtime.LockOSThread()
	unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), 19)
}
