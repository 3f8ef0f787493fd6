package guard

import (
	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/mounts"
)

// Spec is what guard reads of a session: its Plan and where its events go
// (sandbox.Spec's fields of the same names).
type Spec struct {
	Plan  *mounts.Plan
	Event func(name string, fields map[string]any)
}

func emit(spec *Spec, name string, fields map[string]any) {
	if spec.Event != nil {
		spec.Event(name, fields)
	}
}

// openNoLinks opens p as an O_PATH descriptor without following any
// symbolic link on the way (the final one included), as package sandbox's
// openNoLinks does.
func openNoLinks(p string) (int, error) {
	return unix.Openat2(unix.AT_FDCWD, p, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
}
