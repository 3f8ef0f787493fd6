package intercept

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/fedmem/fedmem/sandbox/netproxy"
)

// TestRT18RequestTrailerPlaceholder: a placeholder in a request's trailer
// (a chunked body's trailing header, which net/http forwards after the
// body) — its own credential's, or another credential's whose host this
// is not — is a header the interceptor does not search (inject reads the
// URL and the header only): it reaches the host unrefused and unreported.
func TestRT18RequestTrailerPlaceholder(t *testing.T) {
	testCA, testKey, _, err := NewCA("test-roots")
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(testCA)
	leaf, err := (&Server{CA: testCA, CAKey: testKey}).leaf("api.test")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		io.Copy(io.Discard, q.Body)
		mu.Lock()
		got = append(got, fmt.Sprint(q.Trailer))
		mu.Unlock()
		io.WriteString(w, "ok")
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{*leaf}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	sessCA, sessKey, _, err := NewCA("s1")
	if err != nil {
		t.Fatal(err)
	}
	var evs []string
	ic := &Server{CA: sessCA, CAKey: sessKey, RootCAs: roots,
		Creds: []Cred{
			{Name: "k", Placeholder: placeholder, Real: realKey, Header: "x-api-key", Hosts: []netproxy.Rule{{Host: "api.test", Port: 443}}},
			{Name: "tok", Placeholder: phTok, Real: realTok, Header: "x-token", Hosts: []netproxy.Rule{{Host: "other.test", Port: 443}}},
		},
		OnEvent: func(ev Event) { mu.Lock(); evs = append(evs, fmt.Sprint(ev.Name, ev.Fields)); mu.Unlock() }}
	ap := netip.MustParseAddrPort(srv.Listener.Addr().String())
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pl.Close() })
	go func() {
		for {
			c, err := pl.Accept()
			if err != nil {
				return
			}
			go ic.Serve(c, nil, "api.test", 443, []netip.AddrPort{ap})
		}
	}()
	pool := x509.NewCertPool()
	pool.AddCert(sessCA)
	client := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", pl.Addr().String())
		},
		TLSClientConfig: &tls.Config{RootCAs: pool}}}
	t.Cleanup(client.CloseIdleConnections)
	for _, ph := range []string{placeholder, phTok} {
		req, _ := http.NewRequest("POST", "https://api.test/t", io.NopCloser(strings.NewReader("body")))
		req.ContentLength = -1
		req.Trailer = http.Header{"X-Trail": {ph}}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		mu.Lock()
		saw := strings.Join(got, " ")
		mu.Unlock()
		t.Logf("status %d upstream trailers %s", resp.StatusCode, saw)
		if resp.StatusCode != http.StatusForbidden && strings.Contains(saw, ph) {
			if ph == phTok {
				t.Errorf("the placeholder of credential tok (for other.test) reached api.test in a request trailer, unrefused (%d); events %v", resp.StatusCode, evs)
			} else {
				t.Logf("the placeholder of k reached its own host in a trailer (not its header), unrefused: %d", resp.StatusCode)
			}
		}
	}
}
