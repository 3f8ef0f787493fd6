//go:build !linux

package demo

import (
	"io/fs"
	"syscall"
)

// fileOwner is unknown off Linux; the demo compares the rest.
func fileOwner(fs.FileInfo) (uid, gid int) { return -1, -1 }

// credential is only used by root on Linux.
func credential(uid, gid, group int) *syscall.SysProcAttr { return nil }
