package launch

import (
	"fmt"
	"io"
	"os"
	"reflect"
	"sync"

	"golang.org/x/term"
)

// stdio is the agent's stdin, stdout and stderr as files, and how to undo
// the relays behind them.
type stdio struct {
	in, out, err *os.File
	closers      []func()
}

func isTerminal(f *os.File) bool { return f != nil && term.IsTerminal(int(f.Fd())) }

// attachStdio gives the agent files for its stdio. A non-terminal *os.File
// is passed as it is; a terminal (outside PTY mode) or any other reader or
// writer is relayed through a pipe, so that the agent never holds the
// user's terminal (TIOCSTI, job control, the terminal's other readers). If
// a pipe cannot be made the run is refused: fail closed, never fall back to
// handing over the terminal.
func attachStdio(in io.Reader, out, errw io.Writer, keepTerminals bool) (s *stdio, err error) {
	s = &stdio{}
	defer func() {
		if err != nil {
			s.release()
		}
	}()
	if in == nil {
		f, err := os.Open(os.DevNull)
		if err != nil {
			return s, fmt.Errorf("stdin: %w", err)
		}
		s.in = f
		s.closers = append(s.closers, func() { f.Close() })
	} else if f, ok := in.(*os.File); ok && (keepTerminals || !isTerminal(f)) {
		s.in = f
	} else {
		r, w, err := os.Pipe()
		if err != nil {
			return s, fmt.Errorf("stdin: cannot make a pipe to relay it (refusing to hand the agent the terminal): %w", err)
		}
		go func() { _, _ = io.Copy(w, in); w.Close() }()
		s.in = r
		s.closers = append(s.closers, func() { r.Close() })
	}
	// One writer behind both (a CombinedOutput-style buffer) gets one lock:
	// two relays must not write into it at once.
	sw := map[io.Writer]*syncWriter{}
	for _, x := range []struct {
		name string
		w    io.Writer
		dst  **os.File
	}{{"stdout", out, &s.out}, {"stderr", errw, &s.err}} {
		var w io.Writer = x.w
		if w == nil {
			w = io.Discard
		}
		if f, ok := w.(*os.File); ok && (keepTerminals || !isTerminal(f)) {
			*x.dst = f
			continue
		}
		r, pw, err := os.Pipe()
		if err != nil {
			return s, fmt.Errorf("%s: cannot make a pipe to relay it (refusing to hand the agent the terminal): %w", x.name, err)
		}
		if _, isFile := w.(*os.File); !isFile {
			if !reflect.TypeOf(w).Comparable() {
				w = &syncWriter{w: w} // not a map key; cannot be shared anyway
			} else {
				if sw[w] == nil {
					sw[w] = &syncWriter{w: w}
				}
				w = sw[w]
			}
		}
		done := make(chan struct{})
		go func() { _, _ = io.Copy(w, r); close(done) }()
		*x.dst = pw
		// The write end is passed to the sandbox; our copy closes after the
		// run so that the relay sees EOF once the agent's copies are gone.
		s.closers = append(s.closers, func() { pw.Close(); <-done; r.Close() })
	}
	return s, nil
}

// release closes the relays and waits for the output relays to drain.
func (s *stdio) release() {
	for _, c := range s.closers {
		c()
	}
	s.closers = nil
}

// syncWriter serialises the writes of the relays that share one writer.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
