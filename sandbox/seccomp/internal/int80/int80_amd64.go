package int80

// Available reports whether Syscall exists on this architecture.
const Available = true

// Syscall executes `int $0x80` with eax=trap, ebx=a1, ecx=a2, edx=a3 and
// returns eax (a negative errno on failure).
func Syscall(trap, a1, a2, a3 uintptr) uintptr
