//go:build !linux

package gitindex

import "os"

// FromFile makes the entry (mode 100644, as the gate commits it) for a file at name with content hash
// hash (mtime and size only off Linux: Git then re-reads the file once).
func FromFile(name string, hash [20]byte, fi os.FileInfo) Entry {
	e := Entry{Name: name, Hash: hash, Mtime: fi.ModTime(), Size: uint32(fi.Size())}
	return e
}
