package netproxy

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// recordingUpstream is a loopback HTTP/1.1 server that answers one request
// per connection, half-closes, and then records every further byte the
// connection carries until EOF: whatever a proxy let through after the
// first request. It reports each connection's record on the channel.
func recordingUpstream(t *testing.T) (port int, records <-chan string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	out := make(chan string, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func(c net.Conn) {
				defer c.Close()
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					out <- "unreadable: " + err.Error()
					return
				}
				sent, _ := io.ReadAll(req.Body)
				body := "upstream " + req.Host + " " + req.URL.Path + string(sent)
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
				c.(*net.TCPConn).CloseWrite()
				rest, _ := io.ReadAll(br)
				out <- string(rest)
			}(c)
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, out
}

// TestPlainHTTPEveryRequestChecked: requests pipelined (or sent keep-alive)
// on one plain-HTTP proxy connection are each checked. Before, the proxy
// checked the first request's target and Host, then spliced the
// connection, so a second request on it naming any host reached the
// allowed upstream (which routes on that request's Host: domain fronting
// past the allow list). Now the allowed ones are answered one by one and
// the one naming a refused host gets a 403 naming the rule, and no byte of
// it reaches the upstream.
func TestPlainHTTPEveryRequestChecked(t *testing.T) {
	port, records := recordingUpstream(t)
	ps := strconv.Itoa(port)
	var mu sync.Mutex
	var got []Decision
	p := &Proxy{Policy: &Policy{Rules: []Rule{{Host: "127.0.0.1", Port: port}}}, OnDecision: func(d Decision) {
		mu.Lock()
		got = append(got, d)
		mu.Unlock()
	}}
	c := serve(t, p)
	// All three at once, before any answer: pipelining.
	io.WriteString(c, "GET http://127.0.0.1:"+ps+"/one HTTP/1.1\r\nHost: 127.0.0.1:"+ps+"\r\n\r\n"+
		"POST http://127.0.0.1:"+ps+"/two HTTP/1.1\r\nHost: 127.0.0.1:"+ps+"\r\nContent-Length: 5\r\n\r\nhello"+
		"GET http://forbidden.example/three HTTP/1.1\r\nHost: forbidden.example\r\n\r\n")
	br := bufio.NewReader(c)
	for i, want := range []string{"upstream 127.0.0.1:" + ps + " /one", "upstream 127.0.0.1:" + ps + " /twohello"} {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("response %d: %v", i+1, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(body) != want {
			t.Fatalf("response %d: %d %q, want 200 %q", i+1, resp.StatusCode, body, want)
		}
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Errorf("third request (a refused host on the same connection): %v, want a 403", err)
	} else {
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 403 || !strings.Contains(string(body), "not in the profile's allow list") {
			t.Errorf("third request: %d %q, want 403 naming the allow list", resp.StatusCode, body)
		}
	}
	c.Close()
	for i := 0; i < 2; i++ {
		if rest := <-records; rest != "" {
			t.Errorf("upstream connection %d carried bytes after its one request: %q", i+1, rest)
		}
	}
	p.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 || !got[0].Allowed || !got[1].Allowed || got[2].Allowed || got[2].Host != "forbidden.example" {
		t.Errorf("decisions: %+v, want two allowed and forbidden.example refused", got)
	}
}
