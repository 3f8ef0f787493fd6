//go:build !linux

package main

import (
	"io/fs"
	"syscall"
)

// fileOwner is unknown off Linux; the demo compares the rest.
func fileOwner(fs.FileInfo) (uid, gid int) { return -1, -1 }

// gateCredential is only used by root on Linux.
func gateCredential(uid, gid, group int) *syscall.SysProcAttr { return nil }
