package intercept

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fedmem/fedmem/sandbox/netproxy"
)

const (
	realKey     = "sk-ant-api03-REALrealREALrealREALrealREALreal0123456789"
	placeholder = "sk-ant-api03-PHphPHphPHphPHphPHphPHphPHph98765432100000"
)

// resolver names the test's hosts with public-looking documentation
// addresses (TEST-NET-3); the dial hook maps them to the loopback servers.
type resolver map[string]netip.Addr

func (r resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := r[host]; ok {
		return []netip.Addr{a}, nil
	}
	return nil, errors.New("no such host")
}

type rig struct {
	proxyURL   *url.URL
	client     *http.Client
	apiHits    atomic.Int64
	otherHits  atomic.Int64
	apiSaw     atomic.Value // the x-api-key the api server received
	mu         sync.Mutex
	events     []Event
	refusals   []string
	apiEcho    string
	apiAddr    string
	otherAddr  string
	sessionCAs *x509.CertPool
	roots      *x509.CertPool // the test roots the api server's certificate is from
	authAddr   string
	authSaw    atomic.Value // the refresh_token the token endpoint received
	ic         *Server
	apiAuth    atomic.Value  // the Authorization the api server received
	streamNext chan struct{} // lets api.test/stream send its second event
}

func (r *rig) evs() ([]Event, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event{}, r.events...), append([]string{}, r.refusals...)
}

// newRig: an "api" TLS server (api.test, certificate from a test CA) and
// an "other" plain-HTTP server (other.test), both on loopback; fedmem's
// proxy with one credential for api.test, its interceptor in-process.
func newRig(t testing.TB) *rig { return newRigWith(t, nil) }

// newRigWith is newRig with more credentials, and an OAuth token endpoint
// at auth.test/token that answers a refresh with new tokens.
func newRigWith(t testing.TB, extra []Cred) *rig {
	t.Helper()
	r := &rig{streamNext: make(chan struct{})}
	// The test CA stands in for the public roots.
	up := newTestUpstream(t)
	api := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		if q.URL.Path == "/big" {
			// The throughput benchmark's download.
			n, _ := strconv.Atoi(q.URL.Query().Get("n"))
			w.Header().Set("Content-Length", strconv.Itoa(n))
			buf := make([]byte, 64<<10)
			for n > 0 {
				k := min(n, len(buf))
				w.Write(buf[:k])
				n -= k
			}
			return
		}
		if q.URL.Path == "/stream" {
			// A streamed answer (server-sent events): the first event,
			// then the second only once the test says so.
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: 1\n\n")
			w.(http.Flusher).Flush()
			<-r.streamNext
			io.WriteString(w, "data: 2\n\n")
			return
		}
		r.apiHits.Add(1)
		r.apiSaw.Store(q.Header.Get("X-Api-Key"))
		r.apiAuth.Store(q.Header.Get("Authorization"))
		// A server that echoes the key back (an error page) must not
		// hand the agent the real value; like real ones it compresses
		// when the client asks.
		writeMaybeGzip(w, q, "you sent "+q.Header.Get("X-Api-Key")+" to "+q.Host+q.URL.Path)
	}))
	api.TLS = up.tls(t, "api.test")
	api.StartTLS()
	t.Cleanup(api.Close)
	auth := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		var req map[string]string
		json.NewDecoder(q.Body).Decode(&req)
		r.authSaw.Store(req["refresh_token"])
		w.Header().Set("Content-Type", "application/json")
		writeMaybeGzip(w, q, `{"access_token": "`+newAccess+`", "refresh_token": "`+newRefresh+`", "expires_in": 3600}`)
	}))
	auth.TLS = up.tls(t, "auth.test")
	auth.StartTLS()
	t.Cleanup(auth.Close)
	r.authAddr = auth.Listener.Addr().String()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		// Counted once the whole request arrived: a request cut on its
		// way (the body) never reaches a handler's end.
		if _, err := io.ReadAll(q.Body); err != nil {
			return
		}
		r.otherHits.Add(1)
		io.WriteString(w, "other")
	}))
	t.Cleanup(other.Close)
	r.apiAddr, r.otherAddr = api.Listener.Addr().String(), other.Listener.Addr().String()
	r.roots = up.roots
	apiIP, otherIP, authIP := netip.MustParseAddr("203.0.113.10"), netip.MustParseAddr("203.0.113.20"), netip.MustParseAddr("203.0.113.30")
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		switch addr {
		case netip.AddrPortFrom(apiIP, 443).String():
			addr = r.apiAddr
		case netip.AddrPortFrom(otherIP, 80).String():
			addr = r.otherAddr
		case netip.AddrPortFrom(authIP, 443).String():
			addr = r.authAddr
		default:
			return nil, errors.New("test dial: unexpected " + addr)
		}
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	ic := up.newSessionServer(t)
	r.sessionCAs = x509.NewCertPool()
	r.sessionCAs.AddCert(ic.CA)
	hosts := []netproxy.Rule{{Host: "api.test", Port: 443}}
	ic.Dial = dial
	ic.Creds = append([]Cred{{Name: "anthropic-api-key", Placeholder: placeholder, Real: realKey, Header: "x-api-key", Hosts: hosts}}, extra...)
	ic.OnEvent = func(e Event) { r.mu.Lock(); r.events = append(r.events, e); r.mu.Unlock() }
	r.ic = ic
	secrets := []netproxy.Secret{{Name: "anthropic-api-key", Placeholder: placeholder, Hosts: hosts}}
	for _, c := range extra {
		secrets = append(secrets, netproxy.Secret{Name: c.Name, Placeholder: c.Placeholder, Hosts: c.Hosts})
	}
	p := &netproxy.Proxy{
		Policy: &netproxy.Policy{Mode: netproxy.Public, Resolver: resolver{"api.test": apiIP, "other.test": otherIP, "auth.test": authIP}},
		Dial:   dial,
		Credentials: &netproxy.Credentials{
			Secrets: secrets,
			Hand: func(c net.Conn, pre []byte, host string, port int, addrs []netip.AddrPort) {
				ic.Serve(c, pre, host, port, addrs)
			},
			OnRefused: func(cred, host string, port int, where string) {
				r.mu.Lock()
				r.refusals = append(r.refusals, cred+" "+host+" "+where)
				r.mu.Unlock()
			},
		},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.Serve(c)
		}
	}()
	r.proxyURL, _ = url.Parse("http://" + ln.Addr().String())
	r.client = &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(r.proxyURL),
		TLSClientConfig: &tls.Config{RootCAs: r.sessionCAs}}}
	t.Cleanup(r.client.CloseIdleConnections)
	return r
}

func (r *rig) do(t testing.TB, method, u string, hdr map[string]string, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, u, strings.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestInjectsRealKeyForItsHost: the agent's HTTPS request to the
// credential's host, through the proxy, with the placeholder in the
// credential's header, arrives with the real key, over TLS verified
// against the (test) roots; the agent trusts the session CA, and the real
// key echoed back by the server reaches it as the placeholder.
func TestInjectsRealKeyForItsHost(t *testing.T) {
	r := newRig(t)
	code, body := r.do(t, "POST", "https://api.test/v1/messages", map[string]string{"x-api-key": placeholder}, `{"model":"x"}`)
	if code != 200 {
		t.Fatalf("status %d: %s", code, body)
	}
	if got, _ := r.apiSaw.Load().(string); got != realKey {
		t.Fatalf("the api server received x-api-key %q, want the real key", got)
	}
	if strings.Contains(body, realKey) || !strings.Contains(body, "you sent "+placeholder+" to api.test/v1/messages") {
		t.Fatalf("the agent read %q: the real key must come back as the placeholder", body)
	}
	// Keep-alive: a second request on the same connection is injected too.
	if code, _ := r.do(t, "GET", "https://api.test/v1/models", map[string]string{"x-api-key": placeholder}, ""); code != 200 || r.apiHits.Load() != 2 {
		t.Fatalf("second request: %d, hits %d", code, r.apiHits.Load())
	}
}

// TestPlaceholderElsewhereRefused: the placeholder sent anywhere but its
// credential's header to its host is refused before it leaves, and the
// refusal names the credential: a plain-HTTP request to another host (in
// a header, the URL, the body), a CONNECT whose target carries it, and a
// request to the allowed host with the placeholder in another header.
func TestPlaceholderElsewhereRefused(t *testing.T) {
	r := newRig(t)
	cases := []struct {
		name, method, url string
		hdr               map[string]string
		body, where       string
	}{
		{"header to another host", "GET", "http://other.test/", map[string]string{"x-api-key": placeholder}, "", "header X-Api-Key"},
		{"url to another host", "GET", "http://other.test/?k=" + placeholder, nil, "", "the request line"},
		{"body to another host", "POST", "http://other.test/upload", nil, strings.Repeat("x", 100<<10) + placeholder, "the body"},
		{"connect target", "GET", "https://" + placeholder + ".other.test/", nil, "", ""},
		{"wrong header to its host", "GET", "https://api.test/v1/models", map[string]string{"x-leak": placeholder}, "", "header X-Leak"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body := r.do(t, tc.method, tc.url, tc.hdr, tc.body)
			if code == 200 {
				t.Fatalf("status 200 (%s): the placeholder went through", body)
			}
		})
	}
	if n := r.otherHits.Load(); n != 0 {
		t.Errorf("the other host answered %d request(s) carrying the placeholder", n)
	}
	if n := r.apiHits.Load(); n != 0 {
		t.Errorf("the api host answered %d request(s) with the placeholder in the wrong header", n)
	}
	evs, refusals := r.evs()
	all := strings.Join(refusals, "\n")
	for _, e := range evs {
		if e.Name == "credential" {
			all += "\n" + e.Fields["credential"].(string) + " " + e.Fields["where"].(string)
		}
	}
	for _, want := range []string{"anthropic-api-key other.test header X-Api-Key", "anthropic-api-key other.test the request line",
		"anthropic-api-key other.test the body", "anthropic-api-key header X-Leak"} {
		if !strings.Contains(all, want) {
			t.Errorf("no refusal %q in:\n%s", want, all)
		}
	}
	if strings.Count(all, "anthropic-api-key") < 5 {
		t.Errorf("want 5 refusals naming the credential, got:\n%s", all)
	}
}

// TestOtherHostsTunnelled: a CONNECT to a host no credential names is a
// plain tunnel: the client sees the server's own certificate, not the
// session CA's.
func TestOtherHostsTunnelled(t *testing.T) {
	r := newRig(t)
	c, err := net.Dial("tcp", r.proxyURL.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "CONNECT other.test:80 HTTP/1.1\r\nHost: other.test:80\r\n\r\nGET / HTTP/1.1\r\nHost: other.test\r\nConnection: close\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if string(b) != "other" {
		t.Fatalf("tunnel: %q", b)
	}
}

// TestSOCKSInjects: a SOCKS5 CONNECT (socks5h: the proxy resolves) to the
// credential's host is intercepted like an HTTP CONNECT.
func TestSOCKSInjects(t *testing.T) {
	r := newRig(t)
	tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "socks5h", Host: r.proxyURL.Host}),
		TLSClientConfig: &tls.Config{RootCAs: r.sessionCAs}}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest("GET", "https://api.test/v1/models", nil)
	req.Header.Set("x-api-key", placeholder)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got, _ := r.apiSaw.Load().(string); resp.StatusCode != 200 || got != realKey {
		t.Fatalf("status %d, the api server received %q: want the real key", resp.StatusCode, got)
	}
}

// direct is a client of the api server without the proxy (the baseline).
func (r *rig) direct() *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, r.apiAddr)
		},
		TLSClientConfig: &tls.Config{RootCAs: r.roots, ServerName: "api.test"}}}
}

// BenchmarkRequestLatency: p50 of one small request on a kept-alive
// connection, through the injecting path (proxy, interceptor, TLS twice)
// and directly. No assertion: make bench style numbers only.
func BenchmarkRequestLatency(b *testing.B) {
	r := newRig(b)
	for _, c := range []struct {
		name   string
		client *http.Client
	}{{"direct", r.direct()}, {"injected", r.client}} {
		b.Run(c.name, func(b *testing.B) {
			var ds []time.Duration
			for i := 0; i < b.N; i++ {
				req, _ := http.NewRequest("GET", "https://api.test/v1/models", nil)
				req.Header.Set("x-api-key", placeholder)
				t0 := time.Now()
				resp, err := c.client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				ds = append(ds, time.Since(t0))
			}
			sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
			b.ReportMetric(float64(ds[len(ds)/2].Microseconds()), "p50-µs")
		})
	}
}

// BenchmarkDownload100MB: a 100 MB response through the injecting path and
// directly (its body is scrubbed of real values on the way).
func BenchmarkDownload100MB(b *testing.B) {
	r := newRig(b)
	const n = 100 << 20
	for _, c := range []struct {
		name   string
		client *http.Client
	}{{name: "direct", client: r.direct()}, {name: "injected", client: r.client}} {
		r.client.CloseIdleConnections()
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(n)
			// CPU time of the whole process (server, interceptor and
			// client) per download: what the path costs, whatever else
			// the machine runs (wall-clock MB/s on a shared host is not).
			cpu0 := processCPU()
			defer func() { b.ReportMetric(float64((processCPU()-cpu0).Milliseconds())/float64(b.N), "cpu-ms/op") }()
			for i := 0; i < b.N; i++ {
				req, _ := http.NewRequest("GET", "https://api.test/big?n="+strconv.Itoa(n), nil)
				req.Header.Set("x-api-key", placeholder)
				resp, err := c.client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				got, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if got != n {
					b.Fatalf("got %d bytes", got)
				}
			}
		})
	}
}

// oneByte returns its bytes one read at a time.
type oneByte struct{ s []byte }

func (o *oneByte) Read(p []byte) (int, error) {
	if len(o.s) == 0 {
		return 0, io.EOF
	}
	p[0], o.s = o.s[0], o.s[1:]
	return 1, nil
}
func (o *oneByte) Close() error { return nil }

// TestScrubSplitAcrossReads: a real value echoed in a body arrives as its
// placeholder even when it is split across reads, and the body keeps its
// length.
func TestScrubSplitAcrossReads(t *testing.T) {
	body := "head " + realKey + " middle " + realKey + realKey + " tail"
	s := &Server{Creds: []Cred{{Name: "k", Placeholder: placeholder, Real: realKey}}}
	resp := &http.Response{Header: http.Header{"X-Echo": {realKey}}, Body: &oneByte{s: []byte(body)}}
	s.scrubResponse(resp)
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.ReplaceAll(body, realKey, placeholder)
	if string(got) != want || resp.Header.Get("X-Echo") != placeholder {
		t.Fatalf("got %q (header %q), want %q", got, resp.Header.Get("X-Echo"), want)
	}
}

const (
	oldAccess  = "sk-ant-oat01-OLDaccessOLDaccessOLDaccess0123456789"
	phAccess   = "sk-ant-oat01-PHaccessPHaccessPHaccessPHa9876543210"
	oldRefresh = "sk-ant-ort01-OLDrefreshOLDrefreshOLDrefresh01234567"
	phRefresh  = "sk-ant-ort01-PHrefreshPHrefreshPHrefreshPHr98765432"
	newAccess  = "sk-ant-oat01-NEWaccessNEWaccessNEWaccess0123456789"
	newRefresh = "sk-ant-ort01-NEWrefreshNEWrefreshNEWrefresh01234567"
)

// TestRefresh: the agent refreshes its OAuth login with its placeholder
// refresh token; the token endpoint receives the real one, the agent gets
// placeholders back (not the new tokens), the next API request carries
// the new real access token, and the new values are reported for the
// caller's file.
func TestRefresh(t *testing.T) {
	authHosts := []netproxy.Rule{{Host: "auth.test", Port: 443}}
	apiHosts := []netproxy.Rule{{Host: "api.test", Port: 443}}
	r := newRigWith(t, []Cred{
		{Name: "oauth-access", Placeholder: phAccess, Real: oldAccess, Header: "Authorization", Hosts: apiHosts, File: "/f", FromResponse: "access_token"},
		{Name: "oauth-refresh", Placeholder: phRefresh, Real: oldRefresh, Body: true, Hosts: authHosts, File: "/f", FromResponse: "refresh_token"},
	})
	code, body := r.do(t, "POST", "https://auth.test/token", nil, `{"grant_type": "refresh_token", "refresh_token": "`+phRefresh+`"}`)
	if code != 200 {
		t.Fatalf("refresh: %d %s", code, body)
	}
	if got, _ := r.authSaw.Load().(string); got != oldRefresh {
		t.Fatalf("the token endpoint received %q: want the real refresh token", got)
	}
	if strings.Contains(body, "NEW") || !strings.Contains(body, phAccess) || !strings.Contains(body, phRefresh) {
		t.Fatalf("the agent got %s: want the placeholders, never the new tokens", body)
	}
	if code, _ := r.do(t, "GET", "https://api.test/v1/models", map[string]string{"Authorization": "Bearer " + phAccess}, ""); code != 200 {
		t.Fatalf("api after refresh: %d", code)
	}
	if got, _ := r.apiAuth.Load().(string); got != "Bearer "+newAccess {
		t.Fatalf("the api received %q after the refresh: want the new real access token", got)
	}
	evs, _ := r.evs()
	got := map[string]string{}
	for _, e := range evs {
		if e.Name == netproxy.HelperRefreshed {
			got[e.Fields["credential"].(string)] = e.Fields["value"].(string)
		}
	}
	if got["oauth-access"] != newAccess || got["oauth-refresh"] != newRefresh {
		t.Fatalf("refreshed values reported: %v", got)
	}
}

// writeMaybeGzip answers body, gzip-compressed when the request accepts it
// (as the real API and token endpoints do).
func writeMaybeGzip(w http.ResponseWriter, q *http.Request, body string) {
	if !strings.Contains(q.Header.Get("Accept-Encoding"), "gzip") {
		io.WriteString(w, body)
		return
	}
	w.Header().Set("Content-Encoding", "gzip")
	zw := gzip.NewWriter(w)
	io.WriteString(zw, body)
	zw.Close()
}

// doRawGzip sends a request asking for gzip itself (so the client does not
// decode), and returns the decoded body whatever the answer's encoding.
func (r *rig) doRawGzip(t *testing.T, method, u string, hdr map[string]string, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, u, strings.NewReader(body))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := r.client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if zr, err := gzip.NewReader(bytes.NewReader(raw)); err == nil {
		if b, err := io.ReadAll(zr); err == nil {
			return resp.StatusCode, string(b)
		}
	}
	return resp.StatusCode, string(raw)
}

// TestRefreshCompressedAnswer: an agent that asks the token endpoint for a
// gzip answer must not get the new real tokens (before: the answer was not
// JSON to the interceptor, so it went to the agent as it came, the new
// tokens in clear once decompressed, and nothing was injected or stored).
func TestRefreshCompressedAnswer(t *testing.T) {
	authHosts := []netproxy.Rule{{Host: "auth.test", Port: 443}}
	apiHosts := []netproxy.Rule{{Host: "api.test", Port: 443}}
	r := newRigWith(t, []Cred{
		{Name: "oauth-access", Placeholder: phAccess, Real: oldAccess, Header: "Authorization", Hosts: apiHosts, File: "/f", FromResponse: "access_token"},
		{Name: "oauth-refresh", Placeholder: phRefresh, Real: oldRefresh, Body: true, Hosts: authHosts, File: "/f", FromResponse: "refresh_token"},
	})
	_, body := r.doRawGzip(t, "POST", "https://auth.test/token", nil, `{"grant_type": "refresh_token", "refresh_token": "`+phRefresh+`"}`)
	if strings.Contains(body, newAccess) || strings.Contains(body, newRefresh) {
		t.Fatalf("the agent got the new real tokens through a gzip answer: %s", body)
	}
	if !strings.Contains(body, phAccess) {
		t.Errorf("the refresh's answer %q: want the placeholders", body)
	}
}

// TestEchoCompressedScrubbed: a server echoing the real key in a gzip
// answer the agent asked for must not hand it the real key (the scrub
// reads the bytes on the wire: compressed, the value is not there).
func TestEchoCompressedScrubbed(t *testing.T) {
	r := newRig(t)
	_, body := r.doRawGzip(t, "GET", "https://api.test/v1/messages", map[string]string{"x-api-key": placeholder}, "")
	if strings.Contains(body, realKey) {
		t.Fatalf("the real key reached the agent in a compressed echo: %s", body)
	}
	if !strings.Contains(body, placeholder) {
		t.Errorf("echo %q: want the placeholder", body)
	}
}

// TestInterceptedStreamCannotRetarget: inside the TLS stream of a CONNECT
// to the credential's host, a request in absolute form naming another
// host, a Host header naming another host, an SNI naming another host, or
// an h2c upgrade, still goes to the checked host only (the other host
// never sees the real key), and ALPN offers no h2.
func TestInterceptedStreamCannotRetarget(t *testing.T) {
	r := newRig(t)
	conn, err := net.Dial("tcp", r.proxyURL.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "CONNECT api.test:443 HTTP/1.1\r\nHost: api.test:443\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v %v", resp, err)
	}
	tc := tls.Client(&bufConn{Conn: conn, r: br}, &tls.Config{ServerName: "other.test", RootCAs: r.sessionCAs, InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}})
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	if p := tc.ConnectionState().NegotiatedProtocol; p == "h2" {
		t.Fatalf("ALPN negotiated h2")
	}
	tr := bufio.NewReader(tc)
	for _, head := range []string{
		"GET https://other.test/abs HTTP/1.1\r\nHost: other.test\r\nx-api-key: " + placeholder + "\r\n\r\n",
		"GET /host HTTP/1.1\r\nHost: other.test\r\nx-api-key: " + placeholder + "\r\n\r\n",
		"GET /up HTTP/1.1\r\nHost: api.test\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\nx-api-key: " + placeholder + "\r\n\r\n",
	} {
		io.WriteString(tc, head)
		resp, err := http.ReadResponse(tr, nil)
		if err != nil {
			t.Fatalf("%q: %v", head, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), realKey) {
			t.Errorf("%q: the real key came back: %s", head, b)
		}
		if !strings.Contains(string(b), "to api.test") {
			t.Errorf("%q: answered %d %q: want the checked host's answer", head, resp.StatusCode, b)
		}
	}
	if n := r.otherHits.Load(); n != 0 {
		t.Errorf("the other host answered %d request(s)", n)
	}
}

type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// processCPU is this process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
