package credentials

import (
	"context"
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Watch ends the session (fail closed) when a credential's source file is
// replaced or removed outside while the agent runs: the kernel lazily
// detaches mounts on a dentry unlinked or renamed over in another mount
// namespace (Linux ≥ 3.18), so a `claude login` or a token refresh outside
// that renames a new file over ~/.claude/.credentials.json removes the
// sandbox's bind of the generated copy, and the agent would read the new
// real file through the writable ~/.claude. The kill follows the rename;
// an agent already waiting on the name can read in between
// (docs/threat-model.md, guarantee 8). The after-session mount check
// reports the lost cover too (covers_lost).
func (cs *Session) Watch(ctx context.Context) context.Context {
	if cs == nil {
		return ctx
	}
	names := map[string][]string{} // dir → file names
	for _, s := range cs.secrets {
		if s.cover { // a seed the agent does not see is not covered: its copy is what the agent sees
			d := filepath.Dir(s.file)
			names[d] = append(names[d], filepath.Base(s.file))
		}
	}
	if len(names) == 0 {
		return ctx
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		return ctx
	}
	wds := map[int32]string{}
	for d := range names {
		wd, err := unix.InotifyAddWatch(fd, d, unix.IN_MOVED_TO|unix.IN_MOVED_FROM|unix.IN_CREATE|unix.IN_DELETE|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF|unix.IN_ONLYDIR|unix.IN_DONT_FOLLOW)
		if err == nil {
			wds[int32(wd)] = d
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	f := os.NewFile(uintptr(fd), "inotify")
	cs.stopWatch = func() { cancel(); f.Close() }
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := f.Read(buf)
			if err != nil || n <= 0 {
				return
			}
			for off := 0; off+unix.SizeofInotifyEvent <= n; {
				ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
				nameBytes := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
				off += unix.SizeofInotifyEvent + int(ev.Len)
				name := string(nameBytes)
				for i := 0; i < len(name); i++ {
					if name[i] == 0 {
						name = name[:i]
						break
					}
				}
				d := wds[ev.Wd]
				hit := ev.Mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0
				for _, want := range names[d] {
					hit = hit || name == want
				}
				if hit && d != "" {
					if cs.onEvent != nil {
						cs.onEvent("credential", map[string]any{"credential": "", "where": filepath.Join(d, name), "allowed": false,
							"reason": "a credential source file was replaced or removed outside during the session: the sandbox's cover of it may be gone; the session is ended"})
					}
					cancel()
					return
				}
			}
		}
	}()
	return ctx
}
