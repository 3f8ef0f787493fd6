//go:build !linux

package host

import "github.com/fedmem/fedmem/mounts"

// Alias is mounts.Alias: another path the host shows a folder at.
type Alias = mounts.Alias

// MountTable is empty where there is no mountinfo.
type MountTable struct{}

// ReadMountTable returns the empty table.
func ReadMountTable() *MountTable { return &MountTable{} }

// Aliases finds no alias where there is no mountinfo.
func (*MountTable) Aliases(string) []Alias { return nil }

// NoteHostReadOnly has no table to read here.
func (*MountTable) NoteHostReadOnly(*mounts.Plan) bool { return false }

// Mirrors finds no mirror where there is no mountinfo.
func (*MountTable) Mirrors() []string { return nil }
