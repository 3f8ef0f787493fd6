package guard

import (
	"github.com/fedmem/fedmem/mounts"
	"github.com/fedmem/fedmem/mounts/pin"
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
// symbolic link on the way (the final one included): pin.OpenPath.
func openNoLinks(p string) (int, error) { return pin.OpenPath(p) }
