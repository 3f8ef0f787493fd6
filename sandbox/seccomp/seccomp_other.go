//go:build !linux

package seccomp

import "errors"

// ErrNoNewPrivs is returned by Apply when no_new_privs is not set (Linux).
var ErrNoNewPrivs = errors.New("seccomp: no_new_privs is not set on the calling thread")

// Apply is only implemented on Linux.
func Apply(...uint32) error { return errors.New("seccomp: only supported on Linux") }

// ErrNoListener: no seccomp user notification (not Linux).
var ErrNoListener = errors.New("seccomp: no user-notification listener on this platform")

// ApplyNotify is only implemented on Linux.
func ApplyNotify(bool, ...uint32) (int, error) { return -1, ErrNoListener }
