package netproxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
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

// Proxy serves connections handed to it (Serve), one request each.
type Proxy struct {
	Policy *Policy
	// OnDecision is called for every request; it must not block.
	OnDecision func(Decision)
	// DialTimeout bounds each upstream dial (default 15s).
	DialTimeout time.Duration
	wg          sync.WaitGroup
}

// Serve handles one client connection and closes it.
func (p *Proxy) Serve(c net.Conn) {
	p.wg.Add(1)
	defer p.wg.Done()
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	host, port, err := target(req)
	if err != nil {
		p.decide(Decision{Method: req.Method, Host: req.Host, Reason: err.Error()})
		reply(c, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.dialTimeout())
	defer cancel()
	ap, err := p.Policy.Resolve(ctx, host, port)
	if err != nil {
		p.decide(Decision{Method: req.Method, Host: host, Port: port, Reason: err.Error()})
		reply(c, http.StatusForbidden, err.Error())
		return
	}
	var d net.Dialer
	up, err := d.DialContext(ctx, "tcp", ap.String())
	if err != nil {
		p.decide(Decision{Method: req.Method, Host: host, Port: port, Addr: ap.String(), Reason: "dial: " + err.Error()})
		reply(c, http.StatusBadGateway, err.Error())
		return
	}
	defer up.Close()
	p.decide(Decision{Method: req.Method, Host: host, Port: port, Allowed: true, Addr: ap.String()})
	if req.Method == http.MethodConnect {
		if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
		// Bytes the client sent after the CONNECT header, already buffered.
		if n := br.Buffered(); n > 0 {
			b, _ := br.Peek(n)
			if _, err := up.Write(b); err != nil {
				return
			}
		}
		Splice(c, up)
		return
	}
	// Plain HTTP: forward this one request in origin form, then the
	// response; the connection is not reused.
	req.RequestURI = ""
	req.Header.Del("Proxy-Connection")
	req.Header.Del("Proxy-Authorization")
	req.Close = true
	if err := req.Write(up); err != nil {
		return
	}
	_, _ = io.Copy(c, up)
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

// target extracts host and port from a CONNECT or absolute-form request.
func target(req *http.Request) (string, int, error) {
	var hostport string
	switch {
	case req.Method == http.MethodConnect:
		hostport = req.Host
	case req.URL != nil && req.URL.IsAbs():
		if req.URL.Scheme != "http" {
			return "", 0, fmt.Errorf("scheme %q: use CONNECT for anything but http", req.URL.Scheme)
		}
		hostport = req.URL.Host
		if req.URL.Port() == "" {
			hostport = net.JoinHostPort(req.URL.Hostname(), "80")
		}
	default:
		return "", 0, fmt.Errorf("not a proxy request (want CONNECT host:port or an absolute http:// URL)")
	}
	h, ps, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", 0, fmt.Errorf("bad target %q: %w", hostport, err)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("bad port in %q", hostport)
	}
	return h, port, nil
}

func reply(c net.Conn, code int, msg string) {
	body := "fedmem: " + msg + "\n"
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", code, http.StatusText(code), len(body), body)
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
