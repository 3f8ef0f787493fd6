package intercept

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
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
	up := newTestUpstream(t)
	var mu sync.Mutex
	var got []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, q *http.Request) {
		io.Copy(io.Discard, q.Body)
		mu.Lock()
		got = append(got, fmt.Sprint(q.Trailer))
		mu.Unlock()
		io.WriteString(w, "ok")
	}))
	srv.TLS = up.tls(t, "api.test")
	srv.StartTLS()
	t.Cleanup(srv.Close)
	var evs []string
	ic := up.newSessionServer(t)
	ic.Creds = []Cred{
		{Name: "k", Placeholder: placeholder, Real: realKey, Header: "x-api-key", Hosts: []netproxy.Rule{{Host: "api.test", Port: 443}}},
		{Name: "tok", Placeholder: phTok, Real: realTok, Header: "x-token", Hosts: []netproxy.Rule{{Host: "other.test", Port: 443}}},
	}
	ic.OnEvent = func(ev Event) { mu.Lock(); evs = append(evs, fmt.Sprint(ev.Name, ev.Fields)); mu.Unlock() }
	client := newFront(t, ic, srv.Listener.Addr().String()).client
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
