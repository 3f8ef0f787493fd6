//go:build !(linux && (amd64 || arm64))

package seccomp

// nativeTable: no filter is written for this platform.
var nativeTable func() *archTable
