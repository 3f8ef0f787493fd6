package intercept

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"testing"
)

// testUpstream is a CA standing in for the public roots, with leaves it
// issues for the test's upstream hosts.
type testUpstream struct {
	roots  *x509.CertPool
	issuer *Server
}

func newTestUpstream(t testing.TB) *testUpstream {
	t.Helper()
	ca, key, _, err := NewCA("test-roots")
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	return &testUpstream{roots: roots, issuer: &Server{CA: ca, CAKey: key}}
}

// tls is a server TLS configuration with a leaf for host.
func (u *testUpstream) tls(t testing.TB, host string) *tls.Config {
	t.Helper()
	leaf, err := u.issuer.leaf(host)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{*leaf}}
}

// newSessionServer is an interceptor with a fresh session CA that trusts
// the upstream's roots; the caller adds credentials and an event sink.
func (u *testUpstream) newSessionServer(t testing.TB) *Server {
	t.Helper()
	ca, key, _, err := NewCA("s1")
	if err != nil {
		t.Fatal(err)
	}
	return &Server{CA: ca, CAKey: key, RootCAs: u.roots}
}

// front puts ic on a loopback listener, serving every connection as
// api.test:443 towards upstream, and gives a client that dials it and
// trusts the session CA (as the agent's does). wait returns once every
// connection served so far has ended.
type front struct {
	client *http.Client
	wg     sync.WaitGroup
}

func newFront(t testing.TB, ic *Server, upstream string) *front {
	t.Helper()
	ap := netip.MustParseAddrPort(upstream)
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &front{}
	t.Cleanup(func() { pl.Close() })
	go func() {
		for {
			c, err := pl.Accept()
			if err != nil {
				return
			}
			f.wg.Add(1)
			go func() {
				defer f.wg.Done()
				ic.Serve(c, nil, "api.test", 443, []netip.AddrPort{ap})
			}()
		}
	}()
	pool := x509.NewCertPool()
	pool.AddCert(ic.CA)
	f.client = &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", pl.Addr().String())
		},
		TLSClientConfig: &tls.Config{RootCAs: pool}}}
	t.Cleanup(f.client.CloseIdleConnections)
	return f
}

// wait closes the client's idle connections and waits for their Serve.
func (f *front) wait() {
	f.client.CloseIdleConnections()
	f.wg.Wait()
}
