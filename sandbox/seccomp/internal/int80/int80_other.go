//go:build !amd64

package int80

// Available reports whether Syscall exists on this architecture.
const Available = false

// Syscall is not available here; it returns -ENOSYS.
func Syscall(trap, a1, a2, a3 uintptr) uintptr { return ^uintptr(37) }
