package intercept

import (
	"io"
	"sync"
)

// An answer's body is decrypted from the real host, scrubbed and
// encrypted again to the agent: two AES-GCM passes per byte (a profile
// of a 100 MB download through the interceptor: the two passes and their
// system calls are nearly all of its CPU; the scrub is under 1%). Done
// one after the other in the one goroutine of httputil.ReverseProxy's
// copy, the interceptor is a single stage twice as slow as the agent's
// own decryption. readAhead splits it in two: the body is read
// (decrypted) and scrubbed in a goroutine of its own, one chunk ahead of
// the copy that encrypts it to the agent, so the two passes run on two
// cores at once where the host has them. Nothing waits for more bytes
// than have arrived: a streamed answer (server-sent events) passes each
// chunk on as soon as it is read.

const readAheadChunk = 64 << 10

// readAhead reads rc in a goroutine of its own, one chunk ahead of its
// reader (an io.Pipe: the goroutine's write returns once the reader has
// the chunk, then it reads the next one while the reader works).
func readAhead(rc io.ReadCloser) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		buf := make([]byte, readAheadChunk)
		_, err := io.CopyBuffer(pw, struct{ io.Reader }{rc}, buf)
		pw.CloseWithError(err) // nil: EOF
	}()
	return &aheadBody{pr: pr, rc: rc}
}

type aheadBody struct {
	pr   *io.PipeReader
	rc   io.ReadCloser
	once sync.Once
	err  error
}

func (a *aheadBody) Read(p []byte) (int, error) { return a.pr.Read(p) }

// Close ends the goroutine (its next write fails) and closes the body.
func (a *aheadBody) Close() error {
	a.once.Do(func() {
		a.pr.Close()
		a.err = a.rc.Close()
	})
	return a.err
}
