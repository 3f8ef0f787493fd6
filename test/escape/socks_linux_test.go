package escape

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// socksProbe runs inside the sandbox: a SOCKS5 client written out in
// bytes (RFC 1928: greeting, CONNECT by IPv4 address and by name), curl's
// own SOCKS5 client, and a plain-HTTP request through the HTTP proxy whose
// Host header names another host (domain fronting). argv: allowed port,
// a port of the same host that is not allowed.
const socksProbe = `
import os, socket, struct, subprocess, sys
port, other = int(sys.argv[1]), int(sys.argv[2])
def socks(atyp, addr, p):
    try:
        s = socket.create_connection(("127.0.0.1", 1080), timeout=10)
        s.sendall(b"\x05\x01\x00")
        if s.recv(2) != b"\x05\x00": return "ERR method"
        if atyp == 1: a = socket.inet_aton(addr)
        else: a = bytes([len(addr)]) + addr.encode()
        s.sendall(b"\x05\x01\x00" + bytes([atyp]) + a + struct.pack(">H", p))
        rep = s.recv(10)
        if len(rep) < 2 or rep[1] != 0: return "REFUSED %d" % (rep[1] if len(rep) > 1 else -1)
        s.sendall(b"GET /socks HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        b = b""
        while True:
            d = s.recv(65536)
            if not d: break
            b += d
        return "OK " + b.decode(errors="replace").split("\r\n\r\n", 1)[-1]
    except Exception as e:
        return "ERR %s" % e
def curl(p):
    r = subprocess.run(["curl", "-sS", "--max-time", "10", "--socks5-hostname", "127.0.0.1:1080", "http://127.0.0.1:%d/curl" % p], capture_output=True, text=True)
    return "rc=%d %s%s" % (r.returncode, r.stdout, r.stderr.strip())
def front(host):
    try:
        s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
        s.sendall(("GET http://127.0.0.1:%d/front HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (port, host)).encode())
        b = b""
        while True:
            d = s.recv(65536)
            if not d: break
            b += d
        return "OK " + b.decode(errors="replace").replace("\r\n", " | ")
    except Exception as e:
        return "ERR %s" % e
print("SOCKS_V4", socks(1, "127.0.0.1", port))
print("SOCKS_OTHERPORT", socks(1, "127.0.0.1", other))
print("SOCKS_NAME", socks(3, "localhost", port))
print("CURL", curl(port))
print("CURL_OTHERPORT", curl(other))
print("FRONT", front("forbidden.example"))
print("SAMEHOST", front("127.0.0.1:%d" % port))
print("ALLPROXY", os.environ.get("ALL_PROXY"))
`

// TestNetworkSOCKS: under network: allowlist a real client inside the
// sandbox reaches an allowed loopback address through the SOCKS5 relay
// (hand-written bytes and curl --socks5-hostname), and is refused — with
// SOCKS reply 2, "not allowed by ruleset" — for another port of the same
// host and for a name that resolves to loopback; a plain-HTTP request
// through the HTTP proxy whose Host header names another host is refused
// (403) before anything is dialled. The service sees only the allowed
// requests, and every decision is a network event.
func TestNetworkSOCKS(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	var mu sync.Mutex
	var seen []string
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Host+r.URL.Path)
		mu.Unlock()
		io.WriteString(w, "served "+r.URL.Path)
	})
	srv := httptest.NewServer(handler)
	defer srv.Close()
	otherSrv := httptest.NewServer(handler)
	defer otherSrv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	_, other, _ := net.SplitHostPort(otherSrv.Listener.Addr().String())
	prof := filepath.Join(e.outDir, "socks.yaml")
	os.WriteFile(prof, []byte("name: socks\nextends: default\nnetwork: allowlist\nallow: [\"127.0.0.1:"+port+"\", \"localhost:"+port+"\"]\n"), 0o644)
	evs := filepath.Join(e.outDir, "events.jsonl")
	r := e.run(t, []string{"--profile", prof, "--events", evs}, "python3", "-c", socksProbe, port, other)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("probe:\n%s", r.stdout)
	out := map[string]string{}
	for _, l := range strings.Split(string(r.stdout), "\n") {
		k, v, _ := strings.Cut(l, " ")
		out[k] = v
	}
	for _, c := range []struct{ key, want string }{
		{"SOCKS_V4", "OK served /socks"},
		{"SOCKS_OTHERPORT", "REFUSED 2"},
		{"SOCKS_NAME", "REFUSED 2"}, // listed, but resolves to loopback
		{"CURL", "rc=0 served /curl"},
		{"CURL_OTHERPORT", "rc=97"}, // curl: SOCKS connection failed
		{"FRONT", "403"},
		{"FRONT", "Host header"},
		{"SAMEHOST", "served /front"},
		{"ALLPROXY", "socks5h://127.0.0.1:1080"},
	} {
		if !strings.Contains(out[c.key], c.want) {
			t.Errorf("%s: %q, want it to contain %q", c.key, out[c.key], c.want)
		}
	}
	mu.Lock()
	got := strings.Join(seen, " ")
	mu.Unlock()
	// Exactly the allowed requests: the SOCKS tunnel, curl's, and the
	// plain request whose Host matched. Nothing on the other port, no
	// fronted request.
	want := "127.0.0.1/socks 127.0.0.1:" + port + "/curl 127.0.0.1:" + port + "/front"
	if got != want {
		t.Errorf("the services saw %q, want %q", got, want)
	}
	var socksAllowed, socksDenied, fronting int
	for _, m := range eventsOf(t, evs, "network") {
		reason, _ := m["reason"].(string)
		switch {
		case m["method"] == "SOCKS5" && m["allowed"] == true:
			socksAllowed++
		case m["method"] == "SOCKS5":
			socksDenied++
		case m["method"] == "GET" && strings.Contains(reason, "Host header"):
			fronting++
		}
	}
	if socksAllowed != 2 || socksDenied != 3 || fronting != 1 {
		t.Errorf("network events: SOCKS5 %d allowed, %d denied (want 2, 3); fronting refusals %d (want 1)", socksAllowed, socksDenied, fronting)
	}
}
