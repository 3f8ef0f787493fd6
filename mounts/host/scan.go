package host

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// DefaultScanEntries and DefaultScanTime bound a session's start-time
// scan for unix sockets and FIFOs (Scanner): a tree larger than that
// refuses the session instead of leaving sockets unchecked.
const (
	DefaultScanEntries = 500_000
	DefaultScanTime    = 10 * time.Second
)

// ErrScanBound marks a scan that passed its bound of entries or time.
var ErrScanBound = errors.New("scan bound passed")

// Scanner lists the unix sockets and FIFOs of host trees, for
// mounts.Input.Specials, within one budget of entries and time shared by
// every tree of a session. It never follows a symbolic link; it descends
// into the mounts below a root (the sandbox shows them too, recursively).
type Scanner struct {
	left     int
	deadline time.Time
}

// NewScanner returns a scanner that reads at most entries directory
// entries in all and stops at d from now.
func NewScanner(entries int, d time.Duration) *Scanner {
	return &Scanner{left: entries, deadline: time.Now().Add(d)}
}

// Specials returns the sockets and FIFOs at or under root. A root that
// does not exist has none. A directory this process cannot list but may
// search is an error (a socket in it could still answer a name the agent
// guesses, fail closed); one it may not even search is passed over (the
// agent, the same uid or another without the caller's privilege, cannot
// reach it either).
func (s *Scanner) Specials(root string) ([]string, error) {
	fi, err := os.Lstat(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		if special(fi.Mode()) {
			return []string{root}, nil
		}
		return nil, nil
	}
	var out []string
	stack := []string{root}
	for len(stack) > 0 {
		dir := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		f, err := os.Open(dir)
		if err != nil {
			switch {
			case errors.Is(err, fs.ErrNotExist):
				continue // gone since its parent was read
			case errors.Is(err, fs.ErrPermission) && !searchable(dir):
				continue
			}
			return nil, fmt.Errorf("cannot list %s: %w", dir, err)
		}
		for {
			ents, err := f.ReadDir(1024)
			for _, e := range ents {
				s.left--
				if s.left < 0 {
					f.Close()
					return nil, fmt.Errorf("%w: more entries than the scan reads (under %s); set limits.scan_entries higher or narrow the workdir", ErrScanBound, root)
				}
				p := filepath.Join(dir, e.Name())
				switch t := e.Type(); {
				case t.IsDir():
					stack = append(stack, p)
				case special(t):
					out = append(out, p)
				}
			}
			if time.Now().After(s.deadline) {
				f.Close()
				return nil, fmt.Errorf("%w: the scan took longer than its time bound (under %s); narrow the workdir", ErrScanBound, root)
			}
			if err == io.EOF || (err == nil && len(ents) == 0) {
				break
			}
			if err != nil {
				f.Close()
				if errors.Is(err, fs.ErrNotExist) {
					break
				}
				return nil, fmt.Errorf("cannot list %s: %w", dir, err)
			}
		}
		f.Close()
	}
	return out, nil
}

func special(m fs.FileMode) bool { return m&(fs.ModeSocket|fs.ModeNamedPipe) != 0 }
