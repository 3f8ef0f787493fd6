package intercept

import (
	"bufio"
	"net"
	"sync"
	"sync/atomic"
)

// The interceptor's system calls, per byte: crypto/tls reads the socket
// for about one record (16 KB) at a time and writes each record it seals
// with a system call of its own. On loopback, where the benchmark runs and
// every system call also runs the peer's TCP path, those calls cost more
// than the AES-GCM passes. Below crypto/tls (the TLS itself untouched):
// the upstream connection is read through a large buffer (one read takes
// what has arrived, many records), and the records sealed during one
// Write to the agent go out in one write (batchConn).

// wireBuf is the size of the upstream read buffer, of a batch to the
// agent and of the proxy's copy buffer.
const wireBuf = 256 << 10

// readBufConn reads its connection through a buffer: a read by crypto/tls
// returns what the buffer holds, and refills it with one system call that
// takes everything that has arrived (up to wireBuf). It never waits for
// more than one read of the connection gives.
type readBufConn struct {
	net.Conn
	r *bufio.Reader
	// buffered is r.Buffered() after the last read: the transport's own
	// goroutine reads the connection for the next answer once a body
	// ended, while scrubBody may still ask (recordsWaiting).
	buffered atomic.Int64
}

func newReadBufConn(c net.Conn) *readBufConn {
	return &readBufConn{Conn: c, r: bufio.NewReaderSize(c, wireBuf)}
}

func (c *readBufConn) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.buffered.Store(int64(c.r.Buffered()))
	return n, err
}

// batchConn is the agent's connection under crypto/tls: while a batch is
// open (batchTLS.Write), what crypto/tls writes (one record per write) is
// gathered and goes out in one write when the batch closes, or as soon as
// wireBuf bytes are waiting. Outside a batch (the handshake, an alert) a
// write goes straight out.
type batchConn struct {
	net.Conn
	mu   sync.Mutex
	open int
	buf  []byte
}

func (b *batchConn) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open == 0 {
		return b.Conn.Write(p)
	}
	if len(b.buf)+len(p) > wireBuf {
		if err := b.flushLocked(); err != nil {
			return 0, err
		}
		if len(p) >= wireBuf {
			return b.Conn.Write(p)
		}
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *batchConn) flushLocked() error {
	if len(b.buf) == 0 {
		return nil
	}
	_, err := b.Conn.Write(b.buf)
	b.buf = b.buf[:0]
	return err
}

func (b *batchConn) begin() {
	b.mu.Lock()
	b.open++
	b.mu.Unlock()
}

// end closes a batch: once none is open, what was gathered is written.
func (b *batchConn) end() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.open--
	if b.open > 0 {
		return nil
	}
	return b.flushLocked()
}

// batchTLS is the agent's TLS connection as the HTTP server sees it: each
// Write is one batch of records on the wire.
type batchTLS struct {
	net.Conn // the *tls.Conn over b
	b        *batchConn
}

func (t *batchTLS) Write(p []byte) (int, error) {
	t.b.begin()
	n, err := t.Conn.Write(p)
	if ferr := t.b.end(); err == nil && ferr != nil {
		// The records were gathered, not sent: none of p is known
		// to have reached the agent.
		n, err = 0, ferr
	}
	return n, err
}

// copyBuffers are the reverse proxy's copy buffers (each write to the
// agent is one batch: up to wireBuf bytes in one system call).
type copyBuffers struct{ p sync.Pool }

func (c *copyBuffers) Get() []byte {
	if b, ok := c.p.Get().(*[]byte); ok {
		return *b
	}
	return make([]byte, wireBuf)
}

func (c *copyBuffers) Put(b []byte) {
	if cap(b) >= wireBuf {
		b = b[:wireBuf]
		c.p.Put(&b)
	}
}

var proxyBuffers = &copyBuffers{}

// maxRecord is the largest TLS record on the wire: header, 16 KB of
// plaintext and the most a TLS 1.2 cipher may add.
const maxRecord = 5 + 16<<10 + 2048

// recordsWaiting reports whether the buffer holds at least two whole
// records' worth of bytes: crypto/tls's next record (whatever part of it
// it read already) is then complete here, and a read of the answer's body
// returns without a system call, so it cannot wait for the network.
func (c *readBufConn) recordsWaiting() bool { return c.buffered.Load() >= 2*maxRecord }
