package main

import (
	"io"
	"os"

	"golang.org/x/term"

	"github.com/fedmem/fedmem/sandbox"
)

// detachTerminals replaces every stdio file of spec that is a terminal by a
// pipe relayed from/to that terminal, so the agent never holds the user's
// terminal outside PTY mode.
func detachTerminals(spec *sandbox.Spec) func() {
	var closers []func()
	if term.IsTerminal(int(spec.Stdin.Fd())) {
		r, w, err := os.Pipe()
		if err == nil {
			src := spec.Stdin
			go func() { _, _ = io.Copy(w, src); w.Close() }()
			spec.Stdin = r
			closers = append(closers, func() { r.Close() })
		}
	}
	for _, fp := range []**os.File{&spec.Stdout, &spec.Stderr} {
		if !term.IsTerminal(int((*fp).Fd())) {
			continue
		}
		r, w, err := os.Pipe()
		if err != nil {
			continue
		}
		dst := *fp
		done := make(chan struct{})
		go func() { _, _ = io.Copy(dst, r); close(done) }()
		*fp = w
		closers = append(closers, func() { w.Close(); <-done; r.Close() })
	}
	// The pipe write ends are passed to the sandbox; our copies close after
	// the run so the relays see EOF.
	return func() {
		for _, c := range closers {
			c()
		}
	}
}
