package netproxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// countingServer is a real loopback HTTP server that counts the requests it
// answers: a refusal must leave it at zero.
func countingServer(t *testing.T) (*httptest.Server, *atomic.Int64, string) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		io.WriteString(w, "loopback service "+r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	return srv, &n, port
}

// ask sends one proxy request head and reads the proxy's answer.
func ask(t *testing.T, p *Proxy, head string) (int, string) {
	t.Helper()
	c := serve(t, p)
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%q: %v", head, err)
	}
	body, _ := io.ReadAll(resp.Body)
	c.Close()
	return resp.StatusCode, string(body)
}

// TestPublicRefusesNonPublic: in Public mode, with the real resolver and the
// real dialer, a loopback service on this host is refused through every
// spelling (literal, a name that resolves to 127.0.0.1, IPv6, mapped,
// the host's own addresses), and so are private, CGNAT, ULA, link-local,
// metadata, multicast and unspecified addresses — and the service saw no
// request.
func TestPublicRefusesNonPublic(t *testing.T) {
	_, hits, port := countingServer(t)
	self, err := HostAddrs()
	if err != nil {
		t.Fatal(err)
	}
	var decisions []Decision
	p := &Proxy{Policy: &Policy{Mode: Public, Self: self}, OnDecision: func(d Decision) { decisions = append(decisions, d) }}
	targets := map[string]string{
		"127.0.0.1":          "loopback",
		"localhost":          "loopback", // resolved by the system resolver
		"[::1]":              "loopback",
		"[::ffff:127.0.0.1]": "loopback",
		"10.0.0.1":           "private",
		"172.16.5.4":         "private",
		"192.168.1.1":        "private",
		"100.64.0.1":         "carrier-grade NAT",
		"[fc00::1]":          "private",
		"[fd12:3456::1]":     "private",
		"169.254.169.254":    "cloud metadata",
		"169.254.10.10":      "link-local",
		"[fe80::1]":          "link-local",
		"224.0.0.1":          "link-local", // link-local multicast
		"239.1.2.3":          "multicast",
		"[ff02::1]":          "link-local",
		"0.0.0.0":            "unspecified",
		"[::]":               "unspecified",
	}
	for _, a := range self {
		if Forbidden(a) == "" { // a public address of this host
			targets[netip.AddrPortFrom(a, 0).Addr().String()] = "this host's own address"
		}
	}
	for host, why := range targets {
		hp := net.JoinHostPort(strings.Trim(host, "[]"), port)
		for _, head := range []string{
			"CONNECT " + hp + " HTTP/1.1\r\nHost: " + hp + "\r\n\r\n",
			"GET http://" + hp + "/x HTTP/1.1\r\nHost: " + hp + "\r\n\r\n",
		} {
			code, body := ask(t, p, head)
			if code != 403 || !strings.Contains(body, why) {
				t.Errorf("%s: %d %q, want 403 naming %q", strings.SplitN(head, "\r", 2)[0], code, body, why)
			}
		}
	}
	p.Wait()
	if n := hits.Load(); n != 0 {
		t.Fatalf("the loopback service answered %d requests through the public proxy", n)
	}
	for _, d := range decisions {
		if d.Allowed {
			t.Errorf("allowed: %+v", d)
		}
	}
}

// TestPublicAllowsPublic: a public name is allowed on any port, and the
// proxy dials exactly the address the policy checked. The only fake here:
// the name resolves to a documentation address (203.0.113.7) and the test
// dialer maps that one address to a loopback listener (no test touches a
// real public address).
func TestPublicAllowsPublic(t *testing.T) {
	_, hits, port := countingServer(t)
	pub := netip.MustParseAddr("203.0.113.7")
	var lookups atomic.Int64
	res := resolverFunc(func(host string) ([]netip.Addr, error) {
		lookups.Add(1)
		if host == "public.example" {
			return []netip.Addr{netip.MustParseAddr("10.9.9.9"), pub}, nil
		}
		return nil, errors.New("no such host")
	})
	var dialed []string
	p := &Proxy{
		Policy: &Policy{Mode: Public, Resolver: res},
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dialed = append(dialed, addr)
			if addr != netip.AddrPortFrom(pub, mustPort(port)).String() {
				return nil, errors.New("test dialer: only the checked address")
			}
			var d net.Dialer
			return d.DialContext(ctx, network, "127.0.0.1:"+port)
		},
	}
	code, body := ask(t, p, "GET http://public.example:"+port+"/hello HTTP/1.1\r\nHost: public.example:"+port+"\r\n\r\n")
	if code != 200 || body != "loopback service /hello" {
		t.Fatalf("plain HTTP: %d %q", code, body)
	}
	c := serve(t, p)
	io.WriteString(c, "CONNECT public.example:"+port+" HTTP/1.1\r\nHost: x\r\n\r\nGET /tunnel HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	b, _ := io.ReadAll(c)
	c.Close()
	if !strings.HasPrefix(string(b), "HTTP/1.1 200 Connection established") || !strings.Contains(string(b), "loopback service /tunnel") {
		t.Fatalf("CONNECT: %q", b)
	}
	p.Wait()
	if hits.Load() != 2 || lookups.Load() != 2 {
		t.Errorf("hits %d, lookups %d: want 2 and 2 (one resolution per request)", hits.Load(), lookups.Load())
	}
	for _, d := range dialed {
		if d != pub.String()+":"+port {
			t.Errorf("dialed %s, want only the checked %s:%s (never the private 10.9.9.9)", d, pub, port)
		}
	}
}

// TestAllowlistRefusesSelf: in Allowlist mode too, a listed name that
// resolves to the host's own address is refused.
func TestAllowlistRefusesSelf(t *testing.T) {
	self := netip.MustParseAddr("198.51.100.20")
	p := &Policy{Rules: []Rule{{Host: "me.example", Port: 443}}, Self: []netip.Addr{self},
		Resolver: fakeResolver{"me.example": {self}}}
	if _, err := p.Resolve(context.Background(), "me.example", 443); !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), "this host's own address") {
		t.Fatalf("self through a name: %v", err)
	}
}

type resolverFunc func(host string) ([]netip.Addr, error)

func (f resolverFunc) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return f(host)
}

func mustPort(s string) uint16 {
	n, _ := strconv.Atoi(s)
	return uint16(n)
}
