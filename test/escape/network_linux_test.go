package escape

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// netProbe runs inside the sandbox: plain HTTP through the proxy, CONNECT
// through it by hand, and a direct connection that bypasses it.
const netProbe = `
import os, socket, sys, urllib.request
port = sys.argv[1]
def get(u, proxy=True):
    try:
        op = urllib.request.build_opener() if proxy else urllib.request.build_opener(urllib.request.ProxyHandler({}))
        return "OK %s" % op.open(u, timeout=10).read().decode()
    except Exception as e:
        return "ERR %s" % e
def connect(target):
    try:
        s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
        s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\nGET /tunnel HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % (target, target)).encode())
        b = b""
        while True:
            d = s.recv(65536)
            if not d: break
            b += d
        return "OK " + b.decode(errors="replace").replace("\r\n", " | ")
    except Exception as e:
        return "ERR %s" % e
print("ALLOWED", get("http://127.0.0.1:%s/plain" % port))
print("CONNECT", connect("127.0.0.1:" + port))
print("OTHERPORT", get("http://127.0.0.1:1/"))
print("PRIVATENAME", get("http://localhost:%s/" % port))
print("DIRECT", get("http://127.0.0.1:%s/" % port, proxy=False))
print("PROXYENV", os.environ.get("HTTPS_PROXY"))
`

// TestNetworkAllowlist: with network: allowlist the agent reaches an
// allowed host (plain HTTP and CONNECT) only through fedmem-run's proxy;
// another port is refused, a name that resolves to loopback is refused
// although it is listed, a direct connection fails (the sandbox has its own
// network namespace), and every decision is a network event.
func TestNetworkAllowlist(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "served "+r.URL.Path) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	prof := filepath.Join(e.outDir, "net.yaml")
	os.WriteFile(prof, []byte("name: net\nextends: default\nnetwork: allowlist\nallow: [\"127.0.0.1:"+port+"\", \"localhost:"+port+"\"]\n"), 0o644)
	evs := filepath.Join(e.outDir, "events.jsonl")
	r := e.run(t, []string{"--profile", prof, "--events", evs}, "python3", "-c", netProbe, port)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	out := map[string]string{}
	for _, l := range strings.Split(string(r.stdout), "\n") {
		k, v, _ := strings.Cut(l, " ")
		out[k] = v
	}
	t.Logf("probe:\n%s", r.stdout)
	checks := []struct{ key, want string }{
		{"ALLOWED", "OK served /plain"},
		{"CONNECT", "200 Connection established"},
		{"CONNECT", "served /tunnel"},
		{"OTHERPORT", "403"},
		{"PRIVATENAME", "403"},
		{"DIRECT", "Connection refused"},
		{"PROXYENV", "http://127.0.0.1:3128"},
	}
	for _, c := range checks {
		if !strings.Contains(out[c.key], c.want) {
			t.Errorf("%s: %q, want it to contain %q", c.key, out[c.key], c.want)
		}
	}
	f, err := os.Open(evs)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var allowed, denied int
	var reasons []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		json.Unmarshal(sc.Bytes(), &m)
		if m["event"] != "network" {
			continue
		}
		if m["allowed"] == true {
			allowed++
		} else {
			denied++
			reasons = append(reasons, m["reason"].(string))
		}
	}
	if allowed != 2 || denied != 2 {
		t.Fatalf("network events: %d allowed, %d denied; want 2 and 2 (%v)", allowed, denied, reasons)
	}
	if !strings.Contains(strings.Join(reasons, "\n"), "loopback") {
		t.Errorf("the refusal of a name resolving to loopback does not say so: %v", reasons)
	}
}

// TestNetworkNone: with network: none nothing outside is reachable, not
// even the host's loopback.
func TestNetworkNone(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "served") }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	r := e.run(t, []string{"--profile", "strict"}, "python3", "-c", netProbe, port)
	if !strings.Contains(string(r.stdout), "DIRECT ERR") || strings.Contains(string(r.stdout), "served") {
		t.Fatalf("network none reached the host:\n%s%s", r.stdout, r.stderr)
	}
}
