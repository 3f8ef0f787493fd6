package main

import (
	"io/fs"
	"syscall"
)

// fileOwner returns the uid and gid of a file from its stat data.
func fileOwner(fi fs.FileInfo) (uid, gid int) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid), int(st.Gid)
	}
	return -1, -1
}
