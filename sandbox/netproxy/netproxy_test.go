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
	"testing"
)

type fakeResolver map[string][]netip.Addr

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := f[host]; ok {
		return a, nil
	}
	return nil, errors.New("no such host")
}

func addrs(s ...string) []netip.Addr {
	var out []netip.Addr
	for _, x := range s {
		out = append(out, netip.MustParseAddr(x))
	}
	return out
}

func TestParseRule(t *testing.T) {
	for in, want := range map[string]string{
		"api.anthropic.com:443": "api.anthropic.com:443", "127.0.0.1:8080": "127.0.0.1:8080", "[::1]:80": "[::1]:80",
		"Example.COM.:443": "example.com:443", "api.anthropic.com": "api.anthropic.com", "*.example.com:443": "*.example.com:443",
		"*.Example.com": "*.example.com", "[2001:db8::1]": "[2001:db8::1]", "192.0.2.7": "192.0.2.7", "[::ffff:10.0.0.1]:22": "10.0.0.1:22",
	} {
		r, err := ParseRule(in)
		if err != nil || r.String() != want {
			t.Errorf("%s: %v %v, want %s", in, r, err, want)
		}
	}
	for _, bad := range []string{"host:0", "host:70000", ":443", "a b:1", "*", "*:443", "*.com", "*.com:443", "a.*.com", "**.example.com",
		"*.192.0.2.1", "2001:db8::1", "host:", "exa mple.com", "user@host:22", "host/path:80", "[fe80::1%eth0]:80", "-:"} {
		if _, err := ParseRule(bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

func TestResolve(t *testing.T) {
	p := &Policy{
		Rules: []Rule{{Host: "api.example.com", Port: 443}, {Host: "sneaky.example.com", Port: 443}, {Host: "meta.example.com", Port: 80}, {Host: "127.0.0.1", Port: 8080}, {Host: "mixed.example.com", Port: 443}},
		Resolver: fakeResolver{
			"api.example.com":    addrs("93.184.216.34"),
			"sneaky.example.com": addrs("127.0.0.1", "10.0.0.5"),
			"meta.example.com":   addrs("169.254.169.254"),
			"mixed.example.com":  addrs("192.168.1.1", "93.184.216.35"),
		},
	}
	tests := []struct {
		host string
		port int
		want string // "" = denied, else the address
		why  string
	}{
		{"api.example.com", 443, "93.184.216.34:443", ""},
		{"API.Example.com.", 443, "93.184.216.34:443", ""},
		{"api.example.com", 80, "", "not in the profile's allow list"},
		{"other.example.com", 443, "", "not in the profile's allow list"},
		{"sneaky.example.com", 443, "", "loopback"},
		{"meta.example.com", 80, "", "cloud metadata"},
		{"127.0.0.1", 8080, "127.0.0.1:8080", ""},
		{"127.0.0.1", 8081, "", "not in the profile's allow list"},
		{"mixed.example.com", 443, "93.184.216.35:443", ""},
	}
	for _, tc := range tests {
		ap, err := p.Resolve(context.Background(), tc.host, tc.port)
		if tc.want != "" {
			if err != nil || ap.String() != tc.want {
				t.Errorf("%s:%d = %v %v, want %s", tc.host, tc.port, ap, err, tc.want)
			}
			continue
		}
		if !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s:%d: %v, want denied (%s)", tc.host, tc.port, err, tc.why)
		}
	}
}

func TestForbidden(t *testing.T) {
	for a, want := range map[string]string{
		"127.0.0.1": "loopback", "::1": "loopback", "10.1.2.3": "private", "172.16.0.1": "private",
		"192.168.0.1": "private", "fd00::1": "private", "169.254.1.1": "link-local", "fe80::1": "link-local",
		"169.254.169.254": "cloud metadata", "100.64.0.1": "carrier-grade NAT", "0.0.0.0": "unspecified",
		"239.1.2.3": "multicast", "93.184.216.34": "", "2606:4700::1111": "",
	} {
		if got := Forbidden(netip.MustParseAddr(a)); got != want {
			t.Errorf("%s: %q, want %q", a, got, want)
		}
	}
}

// serve runs the proxy on one end of a real TCP loopback connection.
func serve(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err == nil {
			p.Serve(c)
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestProxyConnectAndHTTP(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello from upstream "+r.URL.Path) }))
	defer up.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(up.URL, "http://"))
	pn, _ := strconv.Atoi(port)
	var got []Decision
	p := &Proxy{Policy: &Policy{Rules: []Rule{{Host: "127.0.0.1", Port: pn}}}, OnDecision: func(d Decision) { got = append(got, d) }}

	// CONNECT, then HTTP through the tunnel.
	c := serve(t, p)
	io.WriteString(c, "CONNECT 127.0.0.1:"+port+" HTTP/1.1\r\nHost: 127.0.0.1:"+port+"\r\n\r\nGET /tunnel HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
	b, _ := io.ReadAll(c)
	c.Close()
	if !strings.HasPrefix(string(b), "HTTP/1.1 200 Connection established") || !strings.Contains(string(b), "hello from upstream /tunnel") {
		t.Fatalf("CONNECT: %q", b)
	}
	// Plain HTTP in absolute form.
	c = serve(t, p)
	io.WriteString(c, "GET http://127.0.0.1:"+port+"/plain HTTP/1.1\r\nHost: 127.0.0.1:"+port+"\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	c.Close()
	if resp.StatusCode != 200 || string(body) != "hello from upstream /plain" {
		t.Fatalf("plain HTTP: %d %q", resp.StatusCode, body)
	}
	// A port not allowed: 403 with the reason, and nothing dialled.
	c = serve(t, p)
	io.WriteString(c, "CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n")
	resp, err = http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	c.Close()
	if resp.StatusCode != 403 || !strings.Contains(string(body), "not in the profile's allow list") {
		t.Fatalf("denied: %d %q", resp.StatusCode, body)
	}
	p.Wait()
	if len(got) != 3 || !got[0].Allowed || !got[1].Allowed || got[2].Allowed || got[2].Reason == "" {
		t.Fatalf("decisions: %+v", got)
	}
}
