package netproxy

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
)

// Credentials is the proxy's side of guarantee 8: it knows each
// credential's placeholder (never its real value) and the hosts it may be
// sent to. A CONNECT to one of those hosts is checked by the policy like
// any other and then handed to Hand — the interceptor (package intercept,
// in the fedmem-cred helper), which injects the real value; every other
// CONNECT stays a plain tunnel. A placeholder the proxy sees anywhere
// else — a CONNECT or SOCKS target, the request line, a header or the body
// of a plain-HTTP request — refuses the connection, and OnRefused reports
// it (the session's "credential" event).
type Credentials struct {
	Secrets []Secret
	// Hand serves an intercepted connection: c is the agent's, after the
	// proxy's 200 answer; pre are bytes it sent after the CONNECT head;
	// addrs are the addresses the policy checked, the only ones it may
	// dial. It must not block for long (it may hand c to another process
	// and return).
	Hand func(c net.Conn, pre []byte, host string, port int, addrs []netip.AddrPort)
	// OnRefused reports a placeholder seen where it may not go.
	OnRefused func(credential, host string, port int, where string)
}

// Secret is one credential's placeholder and hosts.
type Secret struct {
	Name        string
	Placeholder string
	Hosts       []Rule // no port means 443 here
}

// intercepts reports whether a CONNECT to host:port goes to the
// interceptor: some credential names it.
func (cr *Credentials) intercepts(host string, port int) bool {
	if cr == nil || cr.Hand == nil {
		return false
	}
	h := normHost(host)
	for _, s := range cr.Secrets {
		for _, r := range s.Hosts {
			if r.Matches(h, port) {
				return true
			}
		}
	}
	return false
}

// find returns the credential whose placeholder is in s.
func (cr *Credentials) find(s string) string {
	if cr == nil {
		return ""
	}
	for _, sec := range cr.Secrets {
		if sec.Placeholder != "" && strings.Contains(s, sec.Placeholder) {
			return sec.Name
		}
	}
	return ""
}

// findFold is find up to ASCII case: for a header name
// (TestRT18PlaceholderInHeaderName).
func (cr *Credentials) findFold(s string) string {
	if cr == nil {
		return ""
	}
	s = strings.ToLower(s)
	for _, sec := range cr.Secrets {
		if sec.Placeholder != "" && strings.Contains(s, strings.ToLower(sec.Placeholder)) {
			return sec.Name
		}
	}
	return ""
}

func (cr *Credentials) refused(name, host string, port int, where string) {
	if cr.OnRefused != nil {
		cr.OnRefused(name, host, port, where)
	}
}

// credentialHead runs on every HTTP proxy request once its head is read
// (Serve): a placeholder in the request line or a header refuses it; a
// CONNECT to a credential's host is checked by the policy and handed to
// the interceptor. It reports whether it answered the request.
func (p *Proxy) credentialHead(c net.Conn, br *bufio.Reader, req *request, host string, port int) bool {
	cr := p.Credentials
	if cr == nil {
		return false
	}
	where, name := "", cr.find(req.method+" "+req.target)
	if name != "" {
		where = "the request line"
	}
	for k, vs := range req.header {
		if name == "" {
			// A name is read canonicalised (and is case-insensitive on
			// the wire): the placeholder is looked for in any case.
			if name = cr.findFold(k); name != "" {
				where = "a header name" // not the name: it holds the placeholder
			}
		}
		for _, v := range vs {
			if name == "" {
				if name = cr.find(v); name != "" {
					where = "header " + k
				}
			}
		}
	}
	if name == "" && br.Buffered() > 0 {
		b, _ := br.Peek(br.Buffered())
		if name = cr.find(string(b)); name != "" {
			where = "the body"
		}
	}
	if name != "" {
		cr.refused(name, host, port, where)
		err := fmt.Errorf("%w: the placeholder of credential %s in %s of a %s request to %s: it may go only to its own hosts, through the proxy's TLS", ErrDenied, name, where, req.method, hostHeader(host, port))
		p.decide(Decision{Method: req.method, Host: host, Port: port, Reason: err.Error()})
		reply(c, 403, err.Error())
		return true
	}
	if req.method != "CONNECT" || !cr.intercepts(host, port) {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.dialTimeout())
	cands, err := p.Policy.Candidates(ctx, host, port)
	cancel()
	if err != nil {
		p.decide(Decision{Method: req.method, Host: host, Port: port, Reason: err.Error()})
		reply(c, 403, err.Error())
		return true
	}
	p.decide(Decision{Method: req.method, Host: host, Port: port, Allowed: true, Addr: cands[0].String(), Reason: "credential host: intercepted"})
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return true
	}
	var pre []byte
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		pre = append(pre, b...)
	}
	cr.Hand(unscanned(c), pre, host, port, cands)
	return true
}

// unscanned is the client connection itself under a scanConn: the
// interceptor is handed its descriptor (it searches the decrypted stream
// itself), and a wrapper has none.
func unscanned(c net.Conn) net.Conn {
	if s, ok := c.(*scanConn); ok {
		return s.Conn
	}
	return c
}

// socksIntercept is credentialHead's CONNECT path for a SOCKS5 CONNECT to
// a credential's host: checked by the policy, then handed over.
func (p *Proxy) socksIntercept(c net.Conn, br *bufio.Reader, host string, port int) {
	ctx, cancel := context.WithTimeout(context.Background(), p.dialTimeout())
	cands, err := p.Policy.Candidates(ctx, host, port)
	cancel()
	if err != nil {
		p.decide(Decision{Method: "SOCKS5", Host: host, Port: port, Reason: err.Error()})
		socksReply(c, socksNotAllowed)
		return
	}
	p.decide(Decision{Method: "SOCKS5", Host: host, Port: port, Allowed: true, Addr: cands[0].String(), Reason: "credential host: intercepted"})
	socksReply(c, socksSucceeded)
	var pre []byte
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		pre = append(pre, b...)
	}
	p.Credentials.Hand(unscanned(c), pre, host, port, cands)
}

// credentialTarget refuses a SOCKS target that carries a placeholder.
func (p *Proxy) credentialTarget(method, host string, port int) error {
	if name := p.Credentials.find(host); name != "" {
		p.Credentials.refused(name, host, port, "the target host")
		err := fmt.Errorf("%w: the placeholder of credential %s in the target host", ErrDenied, name)
		p.decide(Decision{Method: method, Host: host, Port: port, Reason: err.Error()})
		return err
	}
	return nil
}

// scanBody wraps the agent's side of a plain-HTTP request so that a
// placeholder in the rest of what it sends (a body) cuts the connection
// and is reported. Nil Credentials: c itself.
func (p *Proxy) scanBody(c net.Conn, host string, port int) net.Conn {
	if p.Credentials == nil || len(p.Credentials.Secrets) == 0 {
		return c
	}
	keep := 0
	for _, s := range p.Credentials.Secrets {
		keep = max(keep, len(s.Placeholder)-1)
	}
	return &scanConn{Conn: c, p: p, host: host, port: port, keep: keep}
}

// scanConn reads like its Conn, looking for placeholders across reads (the
// last keep bytes of each read are kept to be searched with the next).
type scanConn struct {
	net.Conn
	p    *Proxy
	host string
	port int
	keep int
	mu   sync.Mutex
	tail []byte
	hit  bool
	on   bool
}

// at names the host the connection's current request goes to (for the
// report of a hit) and turns the search on for what follows its head:
// the head itself and what the parser buffered after it were searched by
// credentialHead, whose findings name where; seed is that buffered tail,
// so a placeholder split across it and the next read is still seen.
func (s *scanConn) at(host string, port int, seed []byte) {
	s.mu.Lock()
	s.host, s.port, s.on = host, port, true
	if len(seed) > s.keep {
		seed = seed[len(seed)-s.keep:]
	}
	s.tail = append(s.tail[:0], seed...)
	s.mu.Unlock()
}

// off stops the search while the next request head is read (credentialHead
// searches heads).
func (s *scanConn) off() {
	s.mu.Lock()
	s.on = false
	s.tail = s.tail[:0]
	s.mu.Unlock()
}

func (s *scanConn) Read(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hit {
		return 0, io.ErrUnexpectedEOF
	}
	n, err := s.Conn.Read(b)
	if n > 0 && s.on {
		win := append(s.tail, b[:n]...)
		if name := s.p.Credentials.find(string(win)); name != "" {
			s.hit = true
			// Reported before the cut: the agent (and a test) that sees
			// the connection end finds the refusal already recorded
			// (TestPlaceholderElsewhereRefused missed it 1 run in 15).
			s.p.Credentials.refused(name, s.host, s.port, "the body")
			s.p.decide(Decision{Method: "HTTP", Host: s.host, Port: s.port, Reason: fmt.Sprintf("%v: the placeholder of credential %s in the body of a plain-HTTP request: connection cut", ErrDenied, name)})
			s.Conn.Close() // cut both ways: the upstream gets nothing more
			return 0, io.ErrUnexpectedEOF
		}
		if len(win) > s.keep {
			win = win[len(win)-s.keep:]
		}
		s.tail = append(s.tail[:0], win...)
	}
	return n, err
}

// CloseWrite half-closes the wrapped connection (Splice).
func (s *scanConn) CloseWrite() error {
	if cw, ok := s.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
