//go:build !linux

package launch

import "os"

func isWhiteout(os.FileInfo) bool { return false }

func opaque(string) bool { return false }

func upperFull(*os.File) bool { return false }
