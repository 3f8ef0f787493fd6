package netproxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
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

// Serve handles one client connection and closes it.
func (p *Proxy) Serve(c net.Conn) {
	p.wg.Add(1)
	defer p.wg.Done()
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReaderSize(io.LimitReader(c, maxHead), 4096)
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
	ctx, cancel := context.WithTimeout(context.Background(), p.dialTimeout())
	defer cancel()
	ap, err := p.Policy.Resolve(ctx, host, port)
	if err != nil {
		p.decide(Decision{Method: req.method, Host: host, Port: port, Reason: err.Error()})
		reply(c, 403, err.Error())
		return
	}
	dial := p.Dial
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	up, err := dial(ctx, "tcp", ap.String())
	if err != nil {
		p.decide(Decision{Method: req.method, Host: host, Port: port, Addr: ap.String(), Reason: "dial: " + err.Error()})
		reply(c, 502, err.Error())
		return
	}
	defer up.Close()
	p.decide(Decision{Method: req.method, Host: host, Port: port, Allowed: true, Addr: ap.String()})
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
