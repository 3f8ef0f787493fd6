package netproxy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Decision is one allow or deny, for the session's events.
type Decision struct {
	Method  string `json:"method"` // CONNECT or the HTTP method
	Host    string `json:"host"`
	Port    int    `json:"port"`
	Allowed bool   `json:"allowed"`
	Addr    string `json:"addr,omitempty"` // where it went
	Reason  string `json:"reason,omitempty"`
}

// Proxy serves connections handed to it (Serve). HTTP is read and written
// by net/http (http.ReadRequest, Request.Write, http.ReadResponse): a
// plain-HTTP connection carries requests that are each framed, checked and
// sent on their own, so the proxy never has to guess where one ends.
type Proxy struct {
	Policy *Policy
	// OnDecision is called for every request; it must not block.
	OnDecision func(Decision)
	// DialTimeout bounds each upstream dial (default 15s).
	DialTimeout time.Duration
	// Credentials, when set, intercept the CONNECTs to credentials' hosts
	// and refuse placeholders seen anywhere else (creds.go).
	Credentials *Credentials
	// Dial dials the address the policy checked (nil: a net.Dialer). Only
	// tests set it.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	wg   sync.WaitGroup
}

// request is the head of one proxy request.
type request struct {
	method, target, proto string
	header                textproto.MIMEHeader
}

const maxHead = 64 << 10

// Serve handles one client connection and closes it. The first byte
// tells the protocol apart: 5 is a SOCKS5 greeting (RFC 1928), anything
// else an HTTP/1.x proxy request (CONNECT or an absolute http:// URL).
// Both take the same path: the policy resolves and checks the target once
// and the proxy dials the address it checked (see connect).
func (p *Proxy) Serve(c net.Conn) {
	p.wg.Add(1)
	defer p.wg.Done()
	defer c.Close()
	// With credentials, everything the agent sends is searched for their
	// placeholders (request heads, plain-HTTP bodies, plain tunnels): a
	// hit cuts the connection and is reported (creds.go).
	c = p.scanBody(c, "", 0)
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	hr := &headReader{lr: io.LimitedReader{R: c, N: maxHead}}
	br := bufio.NewReaderSize(hr, 4096)
	first, err := br.Peek(1)
	if err != nil {
		return
	}
	if first[0] == socksVersion {
		p.serveSOCKS(c, br)
		return
	}
	hreq, req, err := hr.next(br)
	if err != nil {
		p.badRequest(c, req, err)
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	if req.method != "CONNECT" {
		p.servePlain(c, br, hr, hreq, req)
		return
	}
	host, port, _, err := target(req)
	if err != nil {
		p.decide(Decision{Method: req.method, Host: req.target, Reason: err.Error()})
		reply(c, 400, err.Error())
		return
	}
	if p.credentialHead(c, br, req, host, port) {
		return
	}
	scanFrom(c, br, host, port)
	up, code, err := p.connect(req.method, host, port, nil)
	if err != nil {
		reply(c, code, err.Error())
		return
	}
	defer up.Close()
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	// Bytes the client sent after the head, already buffered.
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		if _, err := up.Write(b); err != nil {
			return
		}
	}
	Splice(c, up)
}

// servePlain serves plain-HTTP proxy requests on c, one after another,
// each checked like the first: the policy checks its target, its Host
// header must name that target (see sameHost), and it goes to its own
// upstream connection, framed by net/http (Content-Length or chunked), so
// nothing but that one request reaches the address checked for it. A
// connection is never spliced: bytes after a request are the next request,
// read and checked in turn, never forwarded unread (pipelined and
// keep-alive requests used to reach the first request's upstream
// unchecked, naming any host). The first refusal answers 403 and closes.
func (p *Proxy) servePlain(c net.Conn, br *bufio.Reader, hr *headReader, hreq *http.Request, req *request) {
	for {
		host, port, _, err := target(req)
		if err != nil {
			p.decide(Decision{Method: req.method, Host: req.target, Reason: err.Error()})
			reply(c, 400, err.Error())
			return
		}
		if p.credentialHead(c, br, req, host, port) {
			return
		}
		scanFrom(c, br, host, port)
		// The upstream server routes on the Host header, so a Host that
		// names another host than the one the policy checked would reach
		// that one past the allow list (domain fronting). net/http writes
		// the checked one (the request line's) in any case.
		up, code, err := p.connect(req.method, host, port, func() error { return sameHost(req.header, host, port) })
		if err != nil {
			reply(c, code, err.Error())
			return
		}
		keep := forward(c, up, hreq)
		up.Close()
		if !keep {
			return
		}
		if s, ok := c.(*scanConn); ok {
			s.off()
		}
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
		hreq, req, err = hr.next(br)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				p.badRequest(c, req, err)
			}
			return
		}
		_ = c.SetReadDeadline(time.Time{})
	}
}

// badRequest answers a request head that could not be served: 403 for one
// refused as it stands (req is its head), 400 for one that does not parse.
func (p *Proxy) badRequest(c net.Conn, req *request, err error) {
	if errors.Is(err, ErrDenied) && req != nil {
		p.decide(Decision{Method: req.method, Host: req.target, Reason: err.Error()})
		reply(c, 403, err.Error())
		return
	}
	p.decide(Decision{Reason: "bad request: " + err.Error()})
	reply(c, 400, err.Error())
}

// hopByHop are the request and response headers that describe one
// connection, not the message; the proxy's own connections set their own.
var hopByHop = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authorization", "Proxy-Authenticate", "Te", "Upgrade", "Expect"}

// forward sends one request to up (one request per upstream connection:
// Connection: close) and its response to c. It reports whether c may carry
// another request: the client did not ask to close, everything was sent,
// and the response was framed (a body that ends at EOF ends the
// connection too).
func forward(c, up net.Conn, req *http.Request) bool {
	if req.Header.Get("Expect") != "" && !strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		reply(c, 417, "only Expect: 100-continue is supported")
		return false
	}
	if strings.EqualFold(req.Header.Get("Expect"), "100-continue") {
		// The proxy asks for the body itself; upstream never sees Expect.
		if _, err := io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			return false
		}
	}
	for _, k := range hopByHop {
		req.Header.Del(k)
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // net/http writes none then, not its own
	}
	clientClose := req.Close
	req.Close = true
	var body *errReader
	if req.Body != nil && req.Body != http.NoBody {
		body = &errReader{r: req.Body}
		req.Body = body
	}
	wErr := req.Write(up)
	if wErr != nil {
		clientClose = true
	}
	if body != nil && body.err != nil && body.err != io.EOF {
		// The client's side of the body failed (it went away, or a
		// credential's placeholder cut it, creds.go): the upstream holds
		// a request it will never get the rest of, so no answer is coming.
		return false
	}
	ubr := bufio.NewReader(up)
	var resp *http.Response
	var err error
	for {
		resp, err = http.ReadResponse(ubr, req)
		if err != nil {
			if wErr != nil {
				err = wErr
			}
			reply(c, 502, "upstream: "+err.Error())
			return false
		}
		// Interim answers (103 Early Hints) are dropped; 101 cannot come:
		// the request carried no Upgrade.
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
		resp.Body.Close()
	}
	defer resp.Body.Close()
	for _, k := range hopByHop {
		resp.Header.Del(k)
	}
	framed := resp.ContentLength >= 0 || (len(resp.TransferEncoding) > 0 && resp.TransferEncoding[0] == "chunked")
	keep := !clientClose && framed && resp.StatusCode != http.StatusSwitchingProtocols
	resp.Proto, resp.ProtoMajor, resp.ProtoMinor = "HTTP/1.1", 1, 1
	resp.Close = !keep
	if err := resp.Write(c); err != nil {
		return false
	}
	return keep
}

// scanFrom turns a credential scan of c on for what follows a request
// head that credentialHead passed (creds.go).
func scanFrom(c net.Conn, br *bufio.Reader, host string, port int) {
	s, ok := c.(*scanConn)
	if !ok {
		return
	}
	var seed []byte
	if n := br.Buffered(); n > 0 {
		seed, _ = br.Peek(n)
	}
	s.at(host, port, seed)
}

// errReader remembers the first error of the request body it reads.
type errReader struct {
	r   io.ReadCloser
	err error
}

func (e *errReader) Read(b []byte) (int, error) {
	n, err := e.r.Read(b)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}

func (e *errReader) Close() error { return e.r.Close() }

// headReader is the client connection as the request parser reads it:
// each request head is bounded by maxHead (its body is not), and the
// bytes of the head are kept so its header can be read as sent —
// http.ReadRequest drops the Host header of an absolute-form request
// (RFC 9112 section 3.2.2), and sameHost refuses one that disagrees.
type headReader struct {
	lr  io.LimitedReader
	rec bytes.Buffer
	on  bool
}

func (h *headReader) Read(b []byte) (int, error) {
	n, err := h.lr.Read(b)
	if h.on {
		h.rec.Write(b[:n])
	}
	return n, err
}

// next reads the next request on br (which reads h): net/http's parse (the
// body framed, read through br) and the head as sent.
func (h *headReader) next(br *bufio.Reader) (*http.Request, *request, error) {
	h.rec.Reset()
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		h.rec.Write(b)
	}
	h.lr.N, h.on = maxHead, true
	hreq, err := http.ReadRequest(br)
	h.lr.N, h.on = math.MaxInt64, false
	if err != nil {
		// net/http refuses a second Host header as malformed; it is the
		// fronting attempt sameHost refuses, and is reported as one.
		if r, herr := readHead(bufio.NewReader(bytes.NewReader(h.rec.Bytes()))); herr == nil && len(r.header.Values("Host")) > 1 {
			return nil, r, fmt.Errorf("%w: %d Host headers", ErrDenied, len(r.header.Values("Host")))
		}
		return nil, nil, err
	}
	// The same bytes, parsed by the same textproto reader net/http uses.
	req, err := readHead(bufio.NewReader(bytes.NewReader(h.rec.Bytes())))
	if err != nil {
		return nil, nil, err
	}
	return hreq, req, nil
}

// connect is the one path of every protocol: the policy checks host:port
// and returns the address to dial (resolved once, here), the proxy dials
// exactly that address, and the decision is reported. On failure it
// returns the HTTP status that fits (403 refused, 502 unreachable).
//
// check, when not nil, runs after the policy allowed the target and before
// the dial; its error refuses the request (403).
func (p *Proxy) connect(method, host string, port int, check func() error) (net.Conn, int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), p.dialTimeout())
	defer cancel()
	cands, err := p.Policy.Candidates(ctx, host, port)
	if err == nil && check != nil {
		err = check()
	}
	if err != nil {
		p.decide(Decision{Method: method, Host: host, Port: port, Reason: err.Error()})
		return nil, 403, err
	}
	dial := p.Dial
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	// Every candidate was checked by the policy; each gets its share of
	// what is left of the timeout (an unroutable IPv6 address first must
	// not use it all).
	var errs []string
	for i, ap := range cands {
		actx, acancel := ctx, context.CancelFunc(func() {})
		if dl, ok := ctx.Deadline(); ok {
			actx, acancel = context.WithTimeout(ctx, time.Until(dl)/time.Duration(len(cands)-i))
		}
		up, err := dial(actx, "tcp", ap.String())
		acancel()
		if err == nil {
			p.decide(Decision{Method: method, Host: host, Port: port, Allowed: true, Addr: ap.String()})
			return up, 0, nil
		}
		errs = append(errs, err.Error())
	}
	err = fmt.Errorf("dial: %s", strings.Join(errs, "; "))
	p.decide(Decision{Method: method, Host: host, Port: port, Addr: cands[0].String(), Reason: err.Error()})
	return nil, 502, err
}

// sameHost refuses a plain-HTTP request whose Host header names another
// host (or another explicit port) than its request line (the one the policy checks), or that
// carries more than one Host header. No Host header is fine: the proxy
// adds the checked one.
func sameHost(h textproto.MIMEHeader, host string, port int) error {
	vs := h.Values("Host")
	if len(vs) == 0 {
		return nil
	}
	if len(vs) > 1 {
		return fmt.Errorf("%w: %d Host headers", ErrDenied, len(vs))
	}
	v := strings.TrimSpace(vs[0])
	hh, hp := v, port
	if h2, p2, err := net.SplitHostPort(v); err == nil {
		n, err := strconv.Atoi(p2)
		if err != nil {
			return fmt.Errorf("%w: Host header %q has a bad port", ErrDenied, v)
		}
		hh, hp = h2, n
	}
	// A Host without a port is taken as the request line's port: the
	// server at the checked address is the one that answers either way;
	// what must not differ is the name it routes on.
	if normHost(hh) != normHost(host) || hp != port {
		return fmt.Errorf("%w: Host header %q names another host than the request's %s (domain fronting past the allow list is refused)", ErrDenied, v, hostHeader(host, port))
	}
	return nil
}

func normHost(h string) string {
	h = strings.ToLower(strings.TrimSuffix(strings.Trim(h, "[]"), "."))
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Unmap().String()
	}
	return h
}

// hostHeader is host:port as a Host header writes it (no :80).
func hostHeader(host string, port int) string {
	if port == 80 {
		if strings.Contains(host, ":") {
			return "[" + host + "]"
		}
		return host
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// readHead reads the request line and headers.
func readHead(br *bufio.Reader) (*request, error) {
	tp := textproto.NewReader(br)
	line, err := tp.ReadLine()
	if err != nil {
		return nil, err
	}
	f := strings.Fields(line)
	if len(f) != 3 || !strings.HasPrefix(f[2], "HTTP/1.") {
		return nil, fmt.Errorf("malformed request line %q", line)
	}
	h, err := tp.ReadMIMEHeader()
	if err != nil {
		return nil, err
	}
	return &request{method: f[0], target: f[1], proto: f[2], header: h}, nil
}

func (p *Proxy) dialTimeout() time.Duration {
	if p.DialTimeout > 0 {
		return p.DialTimeout
	}
	return 15 * time.Second
}

func (p *Proxy) decide(d Decision) {
	if p.OnDecision != nil {
		p.OnDecision(d)
	}
}

// Wait waits for the connections being served.
func (p *Proxy) Wait() { p.wg.Wait() }

// target extracts host, port and (for plain HTTP) the origin-form path from
// a CONNECT or absolute-form request.
func target(req *request) (string, int, string, error) {
	var hostport, path string
	switch {
	case req.method == "CONNECT":
		hostport = req.target
	default:
		u, err := url.Parse(req.target)
		if err != nil || !u.IsAbs() {
			return "", 0, "", fmt.Errorf("not a proxy request (want CONNECT host:port or an absolute http:// URL)")
		}
		if u.Scheme != "http" {
			return "", 0, "", fmt.Errorf("scheme %q: use CONNECT for anything but http", u.Scheme)
		}
		hostport = u.Host
		if u.Port() == "" {
			hostport = net.JoinHostPort(u.Hostname(), "80")
		}
		path = u.RequestURI()
	}
	h, ps, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", 0, "", fmt.Errorf("bad target %q: %w", hostport, err)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, "", fmt.Errorf("bad port in %q", hostport)
	}
	return h, port, path, nil
}

var statusText = map[int]string{400: "Bad Request", 403: "Forbidden", 417: "Expectation Failed", 502: "Bad Gateway"}

func reply(c net.Conn, code int, msg string) {
	body := "fedmem: " + msg + "\n"
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", code, statusText[code], len(body), body)
}

// Splice copies both ways, half-closing each side as the other ends, and
// returns when both directions are done.
func Splice(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	<-done
}
