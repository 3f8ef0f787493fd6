package demo

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

// credential runs a child as uid:gid with one supplementary group (the
// gate, or root as an agent, in the agents' group).
func credential(uid, gid, group int) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{uint32(group)}}}
}
