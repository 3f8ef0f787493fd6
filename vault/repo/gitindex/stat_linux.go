package gitindex

import (
	"os"
	"syscall"
	"time"
)

// FromFile makes the entry (mode 100644, as the gate commits it) for a file at name with content hash
// hash, from its Lstat (the stat data Git compares to find it unchanged).
func FromFile(name string, hash [20]byte, fi os.FileInfo) Entry {
	e := Entry{Name: name, Hash: hash, Mtime: fi.ModTime(), Size: uint32(fi.Size())}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		e.Ctime = time.Unix(st.Ctim.Unix())
		e.Dev, e.Ino = uint32(st.Dev), uint32(st.Ino)
		e.UID, e.GID = st.Uid, st.Gid
	}
	return e
}
