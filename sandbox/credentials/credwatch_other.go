//go:build !linux

package launch

import "context"

// watch: Linux only (inotify).
func (cs *credSession) watch(ctx context.Context) context.Context { return ctx }
