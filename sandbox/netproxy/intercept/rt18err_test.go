package intercept

import (
	"bufio"
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/fedmem/fedmem/sandbox/netproxy"
)

// TestRT18UpstreamErrorEchoScrubbed: an allowed host that reflects the
// request's key into an answer net/http cannot parse (a header line with
// no colon, a bad status line) makes the transport's error quote that
// line; the reverse proxy's error handler wrote the error to the agent
// (502 body) and into the network event unscrubbed: the real key in
// clear. Upstream is HTTP/1.1 now (2a31673), so every allowed host's
// answer goes through net/http's HTTP/1.x parser and its quoting errors.
// Fails on 38a1fc2 (the 502 body holds realKey).
func TestRT18UpstreamErrorEchoScrubbed(t *testing.T) {
	up := newTestUpstream(t)
	for _, c := range []struct{ name, answer string }{
		{"header-no-colon", "HTTP/1.1 200 OK\r\nX-Echo KEY\r\nContent-Length: 0\r\n\r\n"},
		{"status-line", "KEY\r\n\r\n"},
		{"bad-content-length", "HTTP/1.1 200 OK\r\nContent-Length: KEY\r\n\r\n"},
		{"content-encoding", "HTTP/1.1 200 OK\r\nContent-Encoding: KEY\r\nContent-Length: 0\r\n\r\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ln, err := tls.Listen("tcp", "127.0.0.1:0", up.tls(t, "api.test"))
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			go func() {
				for {
					s, err := ln.Accept()
					if err != nil {
						return
					}
					go func() {
						defer s.Close()
						q, err := http.ReadRequest(bufio.NewReader(s))
						if err != nil {
							return
						}
						io.WriteString(s, strings.ReplaceAll(c.answer, "KEY", q.Header.Get("X-Api-Key")))
					}()
				}
			}()
			var mu sync.Mutex
			var events []string
			ic := up.newSessionServer(t)
			ic.Creds = []Cred{{Name: "k", Placeholder: placeholder, Real: realKey, Header: "x-api-key", Hosts: []netproxy.Rule{{Host: "api.test", Port: 443}}}}
			ic.OnEvent = func(e Event) {
				mu.Lock()
				events = append(events, e.Name+" "+e.Fields["reason"].(string))
				mu.Unlock()
			}
			f := newFront(t, ic, ln.Addr().String())
			req, _ := http.NewRequest("GET", "https://api.test/echo", nil)
			req.Header.Set("x-api-key", placeholder)
			resp, err := f.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			f.wait()
			t.Logf("%d %q", resp.StatusCode, b)
			if strings.Contains(string(b), realKey) {
				t.Errorf("BREACH: the real key reached the agent in the proxy's error answer: %q", b)
			}
			mu.Lock()
			defer mu.Unlock()
			for _, e := range events {
				if strings.Contains(e, realKey) {
					t.Errorf("the real key is in the session's event: %q", e)
				}
			}
		})
	}
}
