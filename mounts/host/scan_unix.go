//go:build unix

package host

import "syscall"

// searchable reports whether this process may search dir (X_OK).
func searchable(dir string) bool { return syscall.Access(dir, 1) == nil }
