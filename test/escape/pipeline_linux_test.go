package escape

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// pipelineProbe sends, on one connection to the HTTP proxy, a request to
// the allowed loopback service and, pipelined behind it, one naming a
// host the profile does not allow; it prints each response's status line
// and body, one per line, until the proxy closes. argv: allowed port.
const pipelineProbe = `
import socket, sys
port = int(sys.argv[1])
s = socket.create_connection(("127.0.0.1", 3128), timeout=30)
s.sendall(("GET http://127.0.0.1:%d/first HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n" % (port, port) +
           "GET http://forbidden.example/second HTTP/1.1\r\nHost: forbidden.example\r\n\r\n").encode())
f = s.makefile("rb")
while True:
    status = f.readline()
    if not status:
        break
    length = 0
    while True:
        h = f.readline()
        if h in (b"\r\n", b""):
            break
        k, _, v = h.decode().partition(":")
        if k.strip().lower() == "content-length":
            length = int(v)
    body = f.read(length).decode(errors="replace").strip()
    print("RESPONSE", status.decode().strip(), "|", body, flush=True)
print("CLOSED", flush=True)
`

// TestNetworkPipelinedPlainHTTP: under network: allowlist, a second
// plain-HTTP request pipelined on the proxy connection after an allowed
// one is checked on its own: it names a host the profile does not allow
// and gets a 403 naming the rule, and none of its bytes reach the allowed
// service. Before, the proxy checked the first request and spliced the
// connection: the second request went to the first one's service
// unchecked, whatever host it named.
func TestNetworkPipelinedPlainHTTP(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer ln.Close()
	records := make(chan string, 8)
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
					records <- "unreadable: " + err.Error()
					return
				}
				io.Copy(io.Discard, req.Body)
				body := "served " + req.URL.Path
				fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
				c.(*net.TCPConn).CloseWrite()
				rest, _ := io.ReadAll(br)
				records <- string(rest)
			}(c)
		}
	}()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	prof := filepath.Join(e.outDir, "pipeline.yaml")
	must(t, os.WriteFile(prof, []byte("name: pipeline\nextends: default\nnetwork: allowlist\nallow: [\"127.0.0.1:"+port+"\"]\n"), 0o644))
	evs := filepath.Join(e.outDir, "events.jsonl")
	r := e.run(t, []string{"--profile", prof, "--events", evs}, "python3", "-c", pipelineProbe, port)
	t.Logf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	if r.code != 0 {
		t.Fatalf("exit %d", r.code)
	}
	var responses []string
	for _, l := range strings.Split(string(r.stdout), "\n") {
		if rest, ok := strings.CutPrefix(l, "RESPONSE "); ok {
			responses = append(responses, rest)
		}
	}
	if len(responses) != 2 || !strings.HasPrefix(responses[0], "HTTP/1.1 200") || !strings.Contains(responses[0], "served /first") {
		t.Errorf("responses %q, want the allowed one served, then the pipelined one refused", responses)
	} else if !strings.HasPrefix(responses[1], "HTTP/1.1 403") || !strings.Contains(responses[1], "not in the profile's allow list") {
		t.Errorf("pipelined request naming forbidden.example: %q, want 403 naming the allow list", responses[1])
	}
	if rest := <-records; rest != "" {
		t.Errorf("BREACH: the allowed service received bytes after the checked request: %q", rest)
	}
	refused := 0
	for _, m := range eventsOf(t, evs, "network") {
		if m["host"] == "forbidden.example" && m["allowed"] != true {
			refused++
		}
	}
	if refused != 1 {
		t.Errorf("%d refusals of forbidden.example among the network events, want 1", refused)
	}
}
