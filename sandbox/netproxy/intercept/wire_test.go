package intercept

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestStreamedAnswerNotHeld: an event of a streamed answer (server-sent
// events, as the model APIs stream) reaches the agent while the stream is
// open, before the server sends anything more. The scrub keeps back only
// bytes that could begin a real value (here none), and the gathering of
// records never waits for more than has arrived. Fails on the scrub that
// kept back the last len(real value)-1 bytes of every read: the first
// event (9 bytes) waited for the second.
func TestStreamedAnswerNotHeld(t *testing.T) {
	r := newRig(t)
	defer close(r.streamNext)
	req, _ := http.NewRequest("GET", "https://api.test/stream", nil)
	req.Header.Set("x-api-key", placeholder)
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	got := make(chan string, 1)
	go func() {
		br := bufio.NewReader(resp.Body)
		var ev strings.Builder
		for ev.Len() < len("data: 1\n\n") {
			line, err := br.ReadString('\n')
			ev.WriteString(line)
			if err != nil {
				break
			}
		}
		got <- ev.String()
	}()
	// A hang guard, not a timing measure: the event either arrives or
	// never will (the server sends nothing more until told).
	select {
	case ev := <-got:
		if ev != "data: 1\n\n" {
			t.Fatalf("first event %q", ev)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the first event never reached the agent while the stream was open: held back by the proxy")
	}
}

// TestScrubKeepsBackOnlyAPrefix: the scrub keeps back the longest tail of
// what it read that begins a real value (to be completed by the next
// read), nothing more: the rest goes out at once.
func TestScrubKeepsBackOnlyAPrefix(t *testing.T) {
	s := &Server{Creds: []Cred{{Name: "k", Placeholder: placeholder, Real: realKey}}}
	for _, c := range []struct{ first, rest, wantFirst string }{
		{"event one\n", " more", "event one\n"},
		{"x " + realKey[:10], realKey[10:] + " y", "x "},
		{"s" + realKey[:1], realKey[1:], "s"},
		{realKey + " " + realKey[:30], realKey[30:], placeholder + " "},
		{"sk-sk-ant", "-api03- no", "sk-"},
	} {
		pr, pw := io.Pipe()
		resp := &http.Response{Header: http.Header{}, Body: pr}
		s.scrubResponse(resp)
		go pw.Write([]byte(c.first))
		buf := make([]byte, 4096)
		var n int
		var err error
		read := make(chan struct{})
		go func() { n, err = resp.Body.Read(buf); close(read) }()
		select { // a hang guard: nothing more comes until the first read returns
		case <-read:
		case <-time.After(30 * time.Second):
			t.Fatalf("%q: the first read waited for more", c.first)
		}
		if err != nil || string(buf[:n]) != c.wantFirst {
			t.Errorf("%q: first read %q %v, want %q", c.first, buf[:n], err, c.wantFirst)
		}
		go func() { pw.Write([]byte(c.rest)); pw.Close() }()
		rest, _ := io.ReadAll(resp.Body)
		want := strings.ReplaceAll(c.first+c.rest, realKey, placeholder)
		if got := string(buf[:n]) + string(rest); got != want {
			t.Errorf("%q+%q: got %q, want %q", c.first, c.rest, got, want)
		}
	}
}

// pieces returns its bytes in pieces of at most k bytes, one per read.
type pieces struct {
	s []byte
	k int
}

func (p *pieces) Read(b []byte) (int, error) {
	if len(p.s) == 0 {
		return 0, io.EOF
	}
	n := copy(b, p.s[:min(p.k, len(p.s))])
	p.s = p.s[n:]
	return n, nil
}
func (p *pieces) Close() error { return nil }

// TestScrubGathersArrivedRecords: while more of the answer has arrived
// (more reports it), one Read of the scrubbed body returns many reads of
// the upstream at once — and a real value split across them is still
// replaced; when nothing more has arrived, each upstream read is passed
// on as it comes.
func TestScrubGathersArrivedRecords(t *testing.T) {
	s := &Server{Creds: []Cred{{Name: "k", Placeholder: placeholder, Real: realKey}}}
	body := strings.Repeat("a", 1000) + realKey + strings.Repeat("b", 1000) + realKey
	want := strings.ReplaceAll(body, realKey, placeholder)
	for _, arrived := range []bool{true, false} {
		resp := &http.Response{Header: http.Header{}, Body: &pieces{s: []byte(body), k: 100}}
		s.scrubResponse(resp)
		resp.Body.(*scrubBody).more = func() bool { return arrived }
		buf := make([]byte, 64<<10)
		n, err := resp.Body.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		if arrived && string(buf[:n]) != want {
			t.Errorf("arrived: first read %d bytes %q, want the whole body scrubbed", n, buf[:n])
		}
		if !arrived && n > 100 {
			t.Errorf("nothing more arrived: first read %d bytes, want one upstream read (100)", n)
		}
		rest, _ := io.ReadAll(resp.Body)
		if got := string(buf[:n]) + string(rest); got != want {
			t.Errorf("arrived=%v: body %q, want %q", arrived, got, want)
		}
	}
}

// countConn counts the writes that reach it.
type countConn struct {
	net.Conn
	mu     sync.Mutex
	writes int
}

func (c *countConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.writes++
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *countConn) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writes
}

// TestBatchOneWritePerTLSWrite: the records crypto/tls seals for one
// Write of the agent's TLS connection reach the socket in one write (a
// plain tls.Server makes one write per 16 KB record: 13 here), the agent
// reads exactly what was written, and the handshake, written outside any
// batch, is not held.
func TestBatchOneWritePerTLSWrite(t *testing.T) {
	sessCA, sessKey, _, err := NewCA("batch")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{CA: sessCA, CAKey: sessKey}
	leaf, err := s.leaf("api.test")
	if err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	cc := &countConn{Conn: a}
	agent := &batchConn{Conn: cc}
	srv := &batchTLS{Conn: tls.Server(agent, &tls.Config{Certificates: []tls.Certificate{*leaf}}), b: agent}
	roots := tlsRoots(sessCA)
	cl := tls.Client(b, &tls.Config{ServerName: "api.test", RootCAs: roots})
	payload := bytes.Repeat([]byte("0123456789abcdef"), 200<<10/16)
	got := make(chan []byte, 1)
	go func() {
		buf := make([]byte, len(payload))
		_, err := io.ReadFull(cl, buf)
		if err != nil {
			t.Error(err)
		}
		got <- buf
	}()
	if err := srv.Conn.(*tls.Conn).Handshake(); err != nil {
		t.Fatal(err)
	}
	before := cc.count()
	if n, err := srv.Write(payload); err != nil || n != len(payload) {
		t.Fatalf("write: %d %v", n, err)
	}
	if w := cc.count() - before; w != 1 {
		t.Errorf("one Write of %d bytes took %d writes of the socket, want 1", len(payload), w)
	}
	if !bytes.Equal(<-got, payload) {
		t.Errorf("the agent read other bytes than were written")
	}
}

func tlsRoots(ca *x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca)
	return p
}
