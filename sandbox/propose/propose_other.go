//go:build !linux

package propose

import "os"

func isWhiteout(os.FileInfo) bool { return false }

func opaque(string) bool { return false }

func UpperFull(*os.File) bool { return false }
