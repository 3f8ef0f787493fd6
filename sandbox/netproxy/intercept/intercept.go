// Package intercept is the credential-injecting half of fedmem-run's
// network proxy (guarantee 8). It runs in its own helper process,
// fedmem-cred, outside the sandbox: fedmem-run's proxy (sandbox/netproxy,
// which does not link net/http or crypto/tls so that every other session
// starts without them) checks a CONNECT to a credential's host against the
// network policy, and hands the agent's connection and the addresses it
// checked to this package. Here TLS is terminated with a certificate for
// that host signed by the session's CA (whose key never enters the
// sandbox), each request's placeholder is replaced by the real value in the
// header its credential names, and the request is forwarded with
// httputil.ReverseProxy to exactly the checked addresses, verifying the
// real host's certificate (system roots, or RootCAs in tests). A
// placeholder anywhere else in a request — another header, the URL, a host
// its credential does not name — refuses the request and is reported as a
// "credential" event.
package intercept

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"mime"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"net/netip"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fedmem/fedmem/sandbox/netproxy"
)

// Cred is one credential as the interceptor needs it (the wire type).
type Cred = netproxy.HelperCred

func allowed(c *Cred, host string, port int) bool {
	for _, h := range c.Hosts {
		if h.Matches(host, port) {
			return true
		}
	}
	return false
}

// Event is what the interceptor reports: "credential" (a refusal) or
// "network" (a request forwarded or failed).
type Event = netproxy.HelperEvent

// Server serves intercepted connections.
type Server struct {
	Creds []Cred
	CA    *x509.Certificate
	CAKey crypto.Signer
	// RootCAs verify the real hosts (nil: the system roots, which honour
	// SSL_CERT_FILE).
	RootCAs *x509.CertPool
	// Dial dials one checked address (nil: a net.Dialer); only tests set it.
	Dial    func(ctx context.Context, network, addr string) (net.Conn, error)
	OnEvent func(Event)

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
	credMu sync.RWMutex // Creds' Real values change on a refresh
	scrub  *scrubber    // built from Creds and retired; nil: to build
	// retired are credentials as they were before a refresh: their old
	// real values, still valid upstream for a while, are scrubbed too.
	retired []Cred
}

// creds is a snapshot of Creds.
func (s *Server) creds() []Cred {
	s.credMu.RLock()
	defer s.credMu.RUnlock()
	return append([]Cred(nil), s.Creds...)
}

func (s *Server) event(name string, f map[string]any) {
	if s.OnEvent != nil {
		s.OnEvent(Event{Name: name, Fields: f})
	}
}

// NewCA makes a session CA: an ECDSA P-256 key and a self-signed
// certificate that may sign server certificates only, valid for a day.
func NewCA(session string) (*x509.Certificate, crypto.Signer, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: "fedmem session " + session + " credential proxy"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, MaxPathLenZero: true,
		KeyUsage:    x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, nil, err
	}
	return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// leaf is the session CA's certificate for host (cached).
func (s *Server) leaf(host string) (*tls.Certificate, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.leaves[host]; c != nil {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: host},
		NotBefore: now.Add(-time.Hour), NotAfter: s.CA.NotAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if a, err := netip.ParseAddr(host); err == nil {
		tmpl.IPAddresses = []net.IP{a.AsSlice()}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.CA, &key.PublicKey, s.CAKey)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der, s.CA.Raw}, PrivateKey: key}
	if s.leaves == nil {
		s.leaves = map[string]*tls.Certificate{}
	}
	s.leaves[host] = c
	return c, nil
}

// Serve serves one connection the agent opened with CONNECT host:port
// (the proxy already answered 200), pre being bytes it sent after the
// CONNECT head. The upstream is dialled at addrs only: the addresses the
// network policy checked. Serve returns when the connection is done.
func (s *Server) Serve(c net.Conn, pre []byte, host string, port int, addrs []netip.AddrPort) {
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if len(pre) > 0 {
		c = &prefixConn{Conn: c, pre: pre}
	}
	leaf, err := s.leaf(host)
	if err != nil {
		s.event("network", map[string]any{"method": "CONNECT", "host": host, "port": port, "allowed": false, "reason": "credential proxy: certificate: " + err.Error()})
		c.Close()
		return
	}
	agent := &batchConn{Conn: c}
	tc := tls.Server(agent, &tls.Config{Certificates: []tls.Certificate{*leaf}, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12})
	hostport := net.JoinHostPort(host, strconv.Itoa(port))
	tr := &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			dial := s.Dial
			if dial == nil {
				var d net.Dialer
				dial = d.DialContext
			}
			var errs []error
			for _, a := range addrs {
				up, err := dial(ctx, "tcp", a.String())
				if err == nil {
					return newReadBufConn(up), nil
				}
				errs = append(errs, err)
			}
			return nil, fmt.Errorf("dial %s: %w", hostport, errors.Join(errs...))
		},
		TLSClientConfig: &tls.Config{ServerName: host, RootCAs: s.RootCAs, MinVersion: tls.VersionTLS12},
		// HTTP/1.1 upstream, as the agent's side is: one request at a
		// time per agent connection, so HTTP/2's multiplexing gains
		// nothing, and its flow control (a WINDOW_UPDATE for every read
		// of the body, a goroutine hand-off for every frame) tripled the
		// CPU a download cost the real host and added a third to ours.
		ForceAttemptHTTP2:   false,
		MaxIdleConnsPerHost: 4,
		IdleConnTimeout:     90 * time.Second,
	}
	defer tr.CloseIdleConnections()
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host = "https", hostport
			pr.Out.Host = hostHeader(host, port)
			// The transport asks for gzip itself and decodes the answer:
			// an encoding the agent asked for would pass through
			// undecoded, past the scrub and the refresh's reading (a
			// default Go, Python requests or Node client asks for gzip).
			pr.Out.Header.Del("Accept-Encoding")
			// A part of an answer is a part of a real value the host
			// reflects: the scrub matches whole values only, and a host
			// that honours Range hands a value over a few bytes per
			// answer (TestRT18RangeEchoReassembled). The agent asks for
			// the whole; a partial answer is refused (answer).
			for _, h := range partialRequest {
				pr.Out.Header.Del(h)
			}
		},
		Transport:      scrub1xx{rt: tr, s: s},
		BufferPool:     proxyBuffers,
		ModifyResponse: s.answer,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			// The transport's errors quote what the host sent (a header
			// line, a status line, a Content-Length) and ModifyResponse's
			// the encoding it named: a host that reflects the request
			// puts a real value there (TestRT18UpstreamErrorEchoScrubbed).
			// Scrubbed like an answer, and quoted forms too.
			msg := s.scrubber().scrubString(err.Error())
			s.event("network", map[string]any{"method": r.Method, "host": host, "port": port, "allowed": false, "reason": "credential proxy: upstream: " + msg})
			http.Error(w, "fedmem: upstream "+hostport+": "+msg, http.StatusBadGateway)
		},
		// 0: ReverseProxy flushes a streaming response (server-sent
		// events of the model APIs, no Content-Length) at every write
		// by itself; a sized body is copied in large writes.
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, err := s.injectBody(r, host, port)
		if err != nil {
			http.Error(w, "fedmem: "+err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		if name, where := s.inject(r, host, port); name != "" {
			s.event("credential", map[string]any{"credential": name, "host": host, "port": port, "where": where, "allowed": false,
				"reason": "the placeholder of credential " + name + " in " + where + " of a request to " + hostport + ": refused"})
			http.Error(w, "fedmem: credential "+name+" may not be sent there ("+where+")", http.StatusForbidden)
			return
		}
		rp.ServeHTTP(w, r)
	})
	ln := &oneConn{c: &batchTLS{Conn: tc, b: agent}, done: make(chan struct{})}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 30 * time.Second, ErrorLog: nil}
	_ = srv.Serve(ln)
	<-ln.done
}

// partialRequest are the request headers that ask for a part of an answer:
// Range and If-Range (RFC 9110), and Request-Range, which Apache httpd
// took for Range.
var partialRequest = []string{"Range", "If-Range", "Request-Range"}

// answer checks and scrubs an answer of the credential's host before the
// proxy copies it to the agent (ReverseProxy's ModifyResponse): what the
// scrub could not read whole is refused (the error handler answers 502).
func (s *Server) answer(r *http.Response) error {
	if r.StatusCode == http.StatusSwitchingProtocols {
		// What follows an upgrade (a websocket) is a raw stream in both
		// directions: bytes the scrub and the placeholder search do not
		// read (TestRT18EchoTrailerEarlyHintsUpgrade).
		r.Body.Close()
		return errors.New("an upgrade (101 Switching Protocols) of a connection to a credential's host: refused (the stream after it could carry a real value back unscrubbed)")
	}
	byteranges := false
	for _, ct := range r.Header.Values("Content-Type") {
		mt, _, _ := mime.ParseMediaType(ct)
		byteranges = byteranges || strings.EqualFold(mt, "multipart/byteranges")
	}
	if r.StatusCode == http.StatusPartialContent || len(r.Header.Values("Content-Range")) > 0 || byteranges {
		// Range is not sent (Rewrite): a host that answers a part
		// anyway could cut a real value where the scrub does not see
		// it whole (TestRT18RangeEchoReassembled).
		r.Body.Close()
		return fmt.Errorf("a partial answer (%s, Content-Range %q) from a credential's host: refused (a part of a real value is not recognised)", r.Status, r.Header.Get("Content-Range"))
	}
	for _, line := range r.Header.Values("Content-Encoding") {
		// Not asked for (the transport decodes what it asked for):
		// bytes the scrub cannot read are not passed. Every line and
		// every coding in it: the agent reads them all
		// (TestRT18SecondContentEncodingLine).
		for _, ce := range strings.Split(line, ",") {
			if ce = strings.TrimSpace(ce); ce != "" && !strings.EqualFold(ce, "identity") {
				r.Body.Close()
				return fmt.Errorf("an answer in content encoding %q the credential proxy did not ask for: refused (its real values could not be replaced)", ce)
			}
		}
	}
	if req, ok := r.Request.Context().Value(refreshKey{}).(*refreshReq); ok {
		s.refreshed(r, req)
	}
	s.scrubResponse(r)
	return nil
}

// inject replaces, in r's headers, the placeholder of each credential
// allowed for host:port in the header that credential names with its real
// value. Any placeholder left anywhere in the URL or a header refuses the
// request: it returns the credential's name and where it was seen.
func (s *Server) inject(r *http.Request, host string, port int) (string, string) {
	creds := s.creds()
	for i := range creds {
		c := &creds[i]
		if !allowed(c, host, port) {
			continue
		}
		switch {
		case c.Basic:
			v := r.Header.Get("Authorization")
			if b, ok := strings.CutPrefix(v, "Basic "); ok {
				raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b))
				if err == nil {
					user, pass, ok := strings.Cut(string(raw), ":")
					if ok && strings.Contains(pass, c.Placeholder) && !strings.Contains(user, c.Placeholder) {
						pass = strings.ReplaceAll(pass, c.Placeholder, c.Real)
						r.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(user+":"+pass)))
					}
				}
			}
		case c.Header != "":
			vs := r.Header.Values(c.Header)
			for j, v := range vs {
				vs[j] = strings.ReplaceAll(v, c.Placeholder, c.Real)
			}
		}
	}
	for i := range creds {
		c := &creds[i]
		if strings.Contains(r.URL.String(), c.Placeholder) || strings.Contains(r.Host, c.Placeholder) {
			return c.Name, "the URL"
		}
		for k, vs := range r.Header {
			// A name is canonicalised by the server's reader (and is
			// case-insensitive): searched in any case
			// (TestRT18PlaceholderInHeaderName).
			if strings.Contains(strings.ToLower(k), strings.ToLower(c.Placeholder)) {
				return c.Name, "a header name"
			}
			for _, v := range vs {
				if strings.Contains(v, c.Placeholder) {
					return c.Name, "header " + k
				}
				if strings.HasPrefix(v, "Basic ") {
					if raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(v[6:])); err == nil && strings.Contains(string(raw), c.Placeholder) {
						return c.Name, "header " + k + " (basic auth)"
					}
				}
			}
		}
	}
	return "", ""
}

// scrubber is the scrub for every real value (the current ones and those
// a refresh replaced), built once per set of values (a refresh drops it).
// Each value's mask is its placeholder — or, once a refresh made the value
// another length than its placeholder, the placeholder cut or padded to
// its length (TestRT18RefreshedTokenEchoScrubbed) — and each is searched
// in every form formsOf names: for a Basic credential its base64 is the
// echo of the Authorization header (TestRT18BasicAuthEchoScrubbed).
func (s *Server) scrubber() *scrubber {
	s.credMu.Lock()
	defer s.credMu.Unlock()
	if s.scrub != nil {
		return s.scrub
	}
	var pairs []scrubPair
	for _, c := range append(append([]Cred(nil), s.Creds...), s.retired...) {
		if c.Real == "" {
			continue
		}
		for _, p := range formsOf(c.Real, fit(c.Placeholder, len(c.Real))) {
			if !seenFold(pairs, string(p.real)) {
				pairs = append(pairs, p)
			}
		}
	}
	s.scrub = newScrubber(pairs)
	return s.scrub
}

// scrubHeader replaces the real values in h's names and values.
func scrubHeader(h http.Header, sc *scrubber) {
	for k, vs := range h {
		for j, v := range vs {
			vs[j] = sc.scrubString(v)
		}
		if k2 := sc.scrubString(k); k2 != k {
			delete(h, k)
			h[k2] = append(h[k2], vs...)
		}
	}
}

// scrubResponse replaces a real value echoed in the response — its
// headers, its body, its trailers — by its placeholder: the agent never
// reads a real value off the wire. (Informational answers: scrub1xx.)
func (s *Server) scrubResponse(r *http.Response) {
	sc := s.scrubber()
	scrubHeader(r.Header, sc)
	scrubHeader(r.Trailer, sc) // the names announced; the values come after the body
	if r.Body != nil && len(sc.pairs) > 0 {
		keep := sc.maxLen - 1
		// A buffer for one record to start with (most answers are
		// small); it grows to wireBuf once records are waiting.
		b := &scrubBody{rc: r.Body, sc: sc, keep: keep, buf: make([]byte, maxRecord+keep), resp: r}
		// Not through a decompressor: it may need more than has arrived
		// to give anything, and it reads the body to its end (and the
		// transport then reads the connection) before its last bytes.
		if r.Request != nil && !r.Uncompressed {
			if u, ok := r.Request.Context().Value(upstreamKey{}).(*upstream); ok && u.c != nil {
				b.more = u.c.recordsWaiting
			}
		}
		r.Body = b
	}
}

// upstreamKey is the context value scrub1xx adds to each request: the
// connection the transport sends it on (httptrace's GotConn).
type upstreamKey struct{}

type upstream struct{ c *readBufConn }

// scrub1xx scrubs the informational answers (103 Early Hints) that
// httputil.ReverseProxy passes on to the agent as they come: its trace
// hook, added here, is the newest, so it runs before the proxy's copies
// the header (TestRT18EchoTrailerEarlyHintsUpgrade). It also notes the
// upstream connection, whose buffer tells scrubBody when more of the
// answer has arrived.
type scrub1xx struct {
	rt http.RoundTripper
	s  *Server
}

func (x scrub1xx) RoundTrip(r *http.Request) (*http.Response, error) {
	u := &upstream{}
	ctx := context.WithValue(r.Context(), upstreamKey{}, u)
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		Got1xxResponse: func(_ int, h textproto.MIMEHeader) error {
			scrubHeader(http.Header(h), x.s.scrubber())
			return nil
		},
		GotConn: func(i httptrace.GotConnInfo) {
			c := i.Conn
			if tc, ok := c.(interface{ NetConn() net.Conn }); ok {
				c = tc.NetConn()
			}
			u.c, _ = c.(*readBufConn)
		},
	})
	return x.rt.RoundTrip(r.WithContext(ctx))
}

// scrubBody replaces every real value in a response body by its
// placeholder, in place (the same length, so the body's length holds),
// keeping back the tail of each read that begins a real value (the
// longest suffix that is a prefix of one), to be completed or not by the
// next read: a value split across reads is still found, and everything
// else goes out as it arrives (a streamed answer's event is not held
// until the next). At the end of the body it scrubs the response's
// trailers, which the transport has read by then and the proxy copies
// after it.
//
// A read of the body gives one TLS record (16 KB at most). While more
// records have arrived (more: the upstream connection's buffer holds at
// least two whole records, so the next read cannot wait), scrubBody reads
// on, up to its buffer: one Read then hands the proxy a large chunk, which
// goes to the agent in one write (batchConn). It never reads on when a
// read could wait.
type scrubBody struct {
	rc   io.ReadCloser
	sc   *scrubber
	keep int    // the longest proper prefix of a real value
	buf  []byte // buf[:n]: read, scrubbed; buf[:n-hold] may go out
	n    int
	hold int // the tail of buf[:n] that begins a real value
	out  int // buf[:out] already returned
	eof  bool
	resp *http.Response
	more func() bool // nil: one read at a time
}

func (b *scrubBody) Read(p []byte) (int, error) {
	for {
		ready := b.n - b.hold
		if b.eof {
			ready = b.n
		}
		if b.out < ready {
			k := copy(p, b.buf[b.out:ready])
			b.out += k
			return k, nil
		}
		if b.eof {
			return 0, io.EOF
		}
		// Only the kept tail is left: move it to the front of the
		// buffer read into — the caller's own when it has room for a
		// record past the tail (the reverse proxy's 256 KB: the bytes
		// are not copied once more, out of ours), else ours.
		tail := b.n - b.out
		dst, intoP := b.buf, len(p) >= tail+maxRecord
		if intoP {
			dst = p
		}
		copy(dst, b.buf[b.out:b.n])
		b.n, b.out = tail, 0
		n, err := b.fill(&dst, tail, !intoP)
		if n > 0 {
			b.sc.scrub(dst[:n]) // from 0: the tail is shorter than every form
		}
		hold, which := b.sc.prefixTail(dst[:n])
		if err == io.EOF {
			b.eof = true
			if hold >= minForm {
				// The answer ends inside what begins a real value:
				// that beginning goes out masked too.
				copy(dst[n-hold:n], b.sc.pairs[which].mask)
			}
			hold = 0
			if b.resp != nil {
				scrubHeader(b.resp.Trailer, b.sc)
			}
		} else if err != nil {
			return 0, err
		}
		if !intoP {
			b.buf, b.n, b.hold = dst, n, hold
			continue
		}
		// Read into p: what may go out is there; the tail to keep
		// back goes to our buffer.
		b.n = copy(b.buf, p[n-hold:n])
		b.hold = b.n
		if n > hold {
			return n - hold, nil
		}
	}
}

// fill reads the upstream into (*dst)[n:] once, and on while more has
// arrived and (*dst) has room for a record — growing it to wireBuf past
// keep when it is scrubBody's own buffer (own). It returns the bytes now in
// *dst and the last read's error.
func (b *scrubBody) fill(dst *[]byte, n int, own bool) (int, error) {
	for {
		k, err := b.rc.Read((*dst)[n:])
		n += k
		if k == 0 || err != nil || b.more == nil || !b.more() {
			return n, err
		}
		if len(*dst)-n < maxRecord {
			if !own || len(*dst) >= wireBuf+b.keep {
				return n, nil
			}
			*dst = append((*dst)[:n], make([]byte, wireBuf+b.keep-n)...)
		}
	}
}

func (b *scrubBody) Close() error { return b.rc.Close() }

func hostHeader(host string, port int) string {
	if port == 443 {
		if strings.Contains(host, ":") {
			return "[" + host + "]"
		}
		return host
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// prefixConn reads pre before the connection's own bytes.
type prefixConn struct {
	net.Conn
	pre []byte
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.pre) > 0 {
		n := copy(b, p.pre)
		p.pre = p.pre[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}

// oneConn is a listener that accepts one connection, then waits for it to
// close.
type oneConn struct {
	mu   sync.Mutex
	c    net.Conn
	done chan struct{}
	once sync.Once
}

func (l *oneConn) Accept() (net.Conn, error) {
	l.mu.Lock()
	c := l.c
	l.c = nil
	l.mu.Unlock()
	if c != nil {
		return &closeNotify{Conn: c, l: l}, nil
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConn) Close() error   { return nil }
func (l *oneConn) Addr() net.Addr { return &net.UnixAddr{Name: "fedmem-cred", Net: "unix"} }

type closeNotify struct {
	net.Conn
	l *oneConn
}

func (c *closeNotify) Close() error {
	err := c.Conn.Close()
	c.l.once.Do(func() { close(c.l.done) })
	return err
}
