//go:build !linux

package pin

import "github.com/fedmem/fedmem/mounts"

// Record does nothing here: no sandbox runs outside Linux (the admin CLI
// only plans).
func Record(*mounts.Plan, map[string]mounts.Source) error { return nil }

// RecordIn does nothing here either.
func RecordIn(*mounts.Plan, map[string]mounts.Source, *mounts.Links) error { return nil }

// Identify is not available outside Linux.
func Identify(string) (mounts.Source, error) { return mounts.Source{}, nil }
