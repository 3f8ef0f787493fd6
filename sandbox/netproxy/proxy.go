package netproxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
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

// Proxy serves connections handed to it (Serve), one request each. It
// speaks just enough HTTP/1.x for a forward proxy — the request line and
// headers — and deliberately does not link net/http: fedmem-run starts
// twice per launch, and every package it links is paid for each time.
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
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReaderSize(io.LimitReader(c, maxHead), 4096)
	first, err := br.Peek(1)
	if err != nil {
		return
	}
	if first[0] == socksVersion {
		p.serveSOCKS(c, br)
		return
	}
	req, err := readHead(br)
	if err != nil {
		p.decide(Decision{Reason: "bad request: " + err.Error()})
		reply(c, 400, err.Error())
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	host, port, path, err := target(req)
	if err != nil {
		p.decide(Decision{Method: req.method, Host: req.target, Reason: err.Error()})
		reply(c, 400, err.Error())
		return
	}
	if p.credentialHead(c, br, req, host, port) {
		return
	}
	var check func() error
	if req.method != "CONNECT" {
		// Plain HTTP: the upstream server routes on the Host header, so
		// a Host that names another host than the one the policy checked
		// would reach that one past the allow list (domain fronting).
		check = func() error { return sameHost(req.header, host, port) }
	}
	up, code, err := p.connect(req.method, host, port, check)
	if err != nil {
		reply(c, code, err.Error())
		return
	}
	defer up.Close()
	var head strings.Builder
	if req.method == "CONNECT" {
		if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
	} else {
		// Plain HTTP: this one request in origin form, then whatever
		// follows (a body) and the response, byte for byte; the
		// connection is not reused.
		fmt.Fprintf(&head, "%s %s %s\r\n", req.method, path, req.proto)
		if len(req.header.Values("Host")) == 0 {
			fmt.Fprintf(&head, "Host: %s\r\n", hostHeader(host, port))
		}
		for k, vs := range req.header {
			switch k {
			case "Proxy-Connection", "Proxy-Authorization", "Connection", "Keep-Alive":
				continue
			}
			for _, v := range vs {
				fmt.Fprintf(&head, "%s: %s\r\n", k, v)
			}
		}
		head.WriteString("Connection: close\r\n\r\n")
		c = p.scanBody(c, host, port)
	}
	// Bytes the client sent after the head, already buffered.
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		head.Write(b)
	}
	if head.Len() > 0 {
		if _, err := io.WriteString(up, head.String()); err != nil {
			return
		}
	}
	Splice(c, up)
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

var statusText = map[int]string{400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}

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
