//go:build !linux

package credentials

import "context"

// watch: Linux only (inotify).
func (cs *Session) Watch(ctx context.Context) context.Context { return ctx }
