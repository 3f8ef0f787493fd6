package intercept

import (
	"errors"
	"io"
	"testing"
)

// TestReadAheadStreams: the read-ahead hands a streamed answer's chunk
// (one server-sent event) on as soon as it arrived, without waiting for
// more, and Close ends it: the upstream body is closed (its writer sees
// the pipe closed) and a later read fails.
func TestReadAheadStreams(t *testing.T) {
	src, up := io.Pipe()
	body := readAhead(src)
	go up.Write([]byte("data: 1\n\n")) // and nothing more: the stream is open
	buf := make([]byte, 64)
	n, err := body.Read(buf)
	if err != nil || string(buf[:n]) != "data: 1\n\n" {
		t.Fatalf("first event: %q %v", buf[:n], err)
	}
	if err := body.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := up.Write([]byte("data: 2\n\n")); !errors.Is(err, io.ErrClosedPipe) {
		t.Errorf("upstream write after Close: %v, want the body closed", err)
	}
	if _, err := body.Read(buf); err == nil {
		t.Errorf("read after Close succeeded")
	}
}
