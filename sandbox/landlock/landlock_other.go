//go:build !linux

package landlock

// Apply does nothing outside Linux: there is no Landlock. It returns
// Status{ABI: 0} and no error, like a Linux kernel without Landlock.
func Apply(r Rules) (Status, error) { return Status{}, nil }

// ABI returns 0 outside Linux.
func ABI() int { return 0 }
