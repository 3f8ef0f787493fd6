package gate

import "github.com/fedmem/fedmem/gate/intake"

// ErrBusy is returned when another gate holds the state directory.
var ErrBusy = intake.ErrBusy

// ErrUntrustedStateDir is wrapped by Open's error when the state directory
// is not one the gate can trust (intake.PrepareStateDir says why).
var ErrUntrustedStateDir = intake.ErrUntrustedStateDir
