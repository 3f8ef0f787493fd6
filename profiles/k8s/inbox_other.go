//go:build !linux

package k8s

import "errors"

// PrepareInbox is only implemented on Linux (the pod's init container).
func PrepareInbox(dir, session string) error {
	return errors.New("fedmem render inbox: only supported on Linux")
}
