//go:build !linux

package vault

// DropLauncherGroup is a no-op off Linux (fedmem-run needs Linux).
func DropLauncherGroup() (bool, error) { return false, nil }
