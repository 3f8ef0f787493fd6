package mounts

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// Links resolves symbolic links as filepath.EvalSymlinks does — the same
// walk, step for step, the same results and errors — and remembers what
// each lstat and readlink of its walks found, so that paths sharing
// folders (the caller's PATH entries, the homes of /etc/passwd, the
// writable sources under ~/.local/share/fedmem, the plan's paths under
// the workdir) look each folder up once. One Links is one view of the
// host's links, for a stretch of work that changes none of them itself
// (resolve.Resolve: the plan is judged on one consistent view); work
// that creates folders and must see them (pin.Record after the state
// folders are made) uses a fresh one or filepath.EvalSymlinks. A nil
// *Links is filepath.EvalSymlinks. Safe for concurrent use.
type Links struct {
	mu    sync.Mutex
	lstat map[string]lstatResult
	link  map[string]readlinkResult
}

type lstatResult struct {
	mode fs.FileMode
	err  error
}

type readlinkResult struct {
	target string
	err    error
}

// NewLinks returns an empty view.
func NewLinks() *Links {
	return &Links{lstat: map[string]lstatResult{}, link: map[string]readlinkResult{}}
}

// EvalSymlinks is filepath.EvalSymlinks(p) on this view. A relative p
// (resolved against the working directory) is not remembered.
func (l *Links) EvalSymlinks(p string) (string, error) {
	if l == nil || !filepath.IsAbs(p) {
		return filepath.EvalSymlinks(p)
	}
	return l.walk(p)
}

// RealPath is p with its links resolved, or p itself when it does not
// resolve (mounts.Input RealPath).
func (l *Links) RealPath(p string) string {
	if r, err := l.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

func (l *Links) lstatOf(p string) (fs.FileMode, error) {
	l.mu.Lock()
	r, ok := l.lstat[p]
	l.mu.Unlock()
	if !ok {
		fi, err := os.Lstat(p)
		if err == nil {
			r.mode = fi.Mode()
		}
		r.err = err
		l.mu.Lock()
		l.lstat[p] = r
		l.mu.Unlock()
	}
	return r.mode, r.err
}

func (l *Links) readlinkOf(p string) (string, error) {
	l.mu.Lock()
	r, ok := l.link[p]
	l.mu.Unlock()
	if !ok {
		r.target, r.err = os.Readlink(p)
		l.mu.Lock()
		l.link[p] = r
		l.mu.Unlock()
	}
	return r.target, r.err
}

// walk is path/filepath's walkSymlinks for an absolute path on a system
// without volume names, with lstat and readlink from the view.
func (l *Links) walk(path string) (string, error) {
	const volLen = 1 // the leading slash
	dest := "/"
	linksWalked := 0
	for start, end := volLen, volLen; start < len(path); start = end {
		for start < len(path) && os.IsPathSeparator(path[start]) {
			start++
		}
		end = start
		for end < len(path) && !os.IsPathSeparator(path[end]) {
			end++
		}
		if end == start {
			break // no more components
		} else if path[start:end] == "." {
			continue
		} else if path[start:end] == ".." {
			// Back up to the previous component if possible.
			var r int
			for r = len(dest) - 1; r >= volLen; r-- {
				if os.IsPathSeparator(dest[r]) {
					break
				}
			}
			if r < volLen || dest[r+1:] == ".." {
				if len(dest) > volLen {
					dest += "/"
				}
				dest += ".."
			} else {
				dest = dest[:r]
			}
			continue
		}
		if len(dest) > 0 && !os.IsPathSeparator(dest[len(dest)-1]) {
			dest += "/"
		}
		dest += path[start:end]
		mode, err := l.lstatOf(dest)
		if err != nil {
			return "", err
		}
		if mode&fs.ModeSymlink == 0 {
			if !mode.IsDir() && end < len(path) {
				return "", syscall.ENOTDIR
			}
			continue
		}
		linksWalked++
		if linksWalked > 255 {
			return "", errors.New("EvalSymlinks: too many links")
		}
		link, err := l.readlinkOf(dest)
		if err != nil {
			return "", err
		}
		path = link + path[end:]
		if len(link) > 0 && os.IsPathSeparator(link[0]) {
			dest, end = "/", 1 // a link to an absolute path
		} else {
			// A link to a relative path: replace the last component.
			var r int
			for r = len(dest) - 1; r >= volLen; r-- {
				if os.IsPathSeparator(dest[r]) {
					break
				}
			}
			if r < volLen {
				dest = "/"
			} else {
				dest = dest[:r]
			}
			end = 0
		}
	}
	return filepath.Clean(dest), nil
}
