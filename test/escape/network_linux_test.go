package escape

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
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
	var allowed, denied int
	var reasons []string
	for _, m := range eventsOf(t, evs, "network") {
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
	r := e.run(t, []string{"--profile", strictProfile(t, e)}, "python3", "-c", netProbe, port)
	if !strings.Contains(string(r.stdout), "DIRECT ERR") || strings.Contains(string(r.stdout), "served") {
		t.Fatalf("network none reached the host:\n%s%s", r.stdout, r.stderr)
	}
}

// publicProbe runs inside the sandbox under network: public: every way to
// the host's services and the metadata endpoint, through the proxy and
// around it. argv: port, the host's own non-loopback address ("" if none).
const publicProbe = `
import os, socket, sys, urllib.request
port, hostip = sys.argv[1], sys.argv[2]
def get(u, proxy=True):
    try:
        op = urllib.request.build_opener() if proxy else urllib.request.build_opener(urllib.request.ProxyHandler({}))
        return "OK %s" % op.open(u, timeout=10).read().decode()
    except Exception as e:
        return "ERR %s" % e
def connect(target):
    try:
        s = socket.create_connection(("127.0.0.1", 3128), timeout=10)
        s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
        return "OK " + s.recv(65536).decode(errors="replace").replace("\r\n", " | ")
    except Exception as e:
        return "ERR %s" % e
def direct(h):
    try:
        socket.create_connection((h, int(port)), timeout=5)
        return "OK connected"
    except Exception as e:
        return "ERR %s" % e
print("LOOPBACK", get("http://127.0.0.1:%s/" % port))
print("LOCALHOST", get("http://localhost:%s/" % port))
print("CONNECT", connect("127.0.0.1:" + port))
print("CONNECT6", connect("[::1]:" + port))
print("METADATA", get("http://169.254.169.254/latest/meta-data/"))
print("METACONNECT", connect("169.254.169.254:80"))
print("PRIVATE", connect("10.0.0.1:" + port))
print("DIRECT", direct("127.0.0.1"))
if hostip:
    print("SELF", get("http://%s:%s/" % (hostip, port)))
    print("SELFDIRECT", direct(hostip))
print("PROXYENV", os.environ.get("HTTPS_PROXY"), os.environ.get("http_proxy"))
`

// TestNetworkPublic: the built-in agent profiles (default, claude, codex)
// use network: public. A service on the host (bound to every address, as
// a local database or a Docker API often is) is out of the agent's reach:
// through the proxy by 127.0.0.1, ::1, localhost (a name resolving to
// loopback: refused after resolution), the host's own non-loopback address
// and CONNECT; the metadata endpoint 169.254.169.254 and private ranges are
// refused; a direct connection fails (own network namespace). Each refusal
// says why, in the response and in the network events; the service saw no
// request at all. (The allowed path — a public address — is tested in
// sandbox/netproxy: no test here touches a real public address.)
func TestNetworkPublic(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	var hits atomic.Int64
	ln, err := net.Listen("tcp", ":0") // every address of the host
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "HOST-SERVICE-SECRET")
	}))
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	defer srv.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	hostIP := ""
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
				hostIP = n.IP.String()
				break
			}
		}
	}
	t.Logf("host service on port %s; host address %q", port, hostIP)
	for _, prof := range []string{"default", "claude", "codex"} {
		t.Run(prof, func(t *testing.T) {
			evs := filepath.Join(e.outDir, prof+"-events.jsonl")
			r := e.run(t, []string{"--profile", prof, "--events", evs}, "python3", "-c", publicProbe, port, hostIP)
			t.Logf("probe:\n%s", r.stdout)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if strings.Contains(string(r.stdout), "HOST-SERVICE-SECRET") {
				t.Fatalf("the agent reached the host's service:\n%s", r.stdout)
			}
			out := map[string]string{}
			for _, l := range strings.Split(string(r.stdout), "\n") {
				k, v, _ := strings.Cut(l, " ")
				out[k] = v
			}
			checks := []struct{ key, want string }{
				{"LOOPBACK", "403"},
				{"LOCALHOST", "403"},
				{"CONNECT", "403"},
				{"CONNECT", "loopback"},
				{"CONNECT6", "loopback"},
				{"METADATA", "403"},
				{"METACONNECT", "cloud metadata"},
				{"PRIVATE", "private"},
				{"DIRECT", "ERR"},
				{"PROXYENV", "http://127.0.0.1:3128 http://127.0.0.1:3128"},
			}
			if hostIP != "" {
				checks = append(checks, struct{ key, want string }{"SELF", "403"}, struct{ key, want string }{"SELFDIRECT", "ERR"})
			}
			for _, c := range checks {
				if !strings.Contains(out[c.key], c.want) {
					t.Errorf("%s: %q, want it to contain %q", c.key, out[c.key], c.want)
				}
			}
			b, err := os.ReadFile(evs)
			if err != nil {
				t.Fatal(err)
			}
			var reasons []string
			for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				var m map[string]any
				json.Unmarshal([]byte(l), &m)
				if m["event"] == "network" {
					if m["allowed"] == true {
						t.Errorf("allowed: %v", m)
					}
					reasons = append(reasons, fmt.Sprint(m["reason"]))
				}
				if m["event"] == "start" && m["network"] != "public" {
					t.Errorf("start event: network %v, want public", m["network"])
				}
			}
			all := strings.Join(reasons, "\n")
			for _, why := range []string{"loopback", "cloud metadata", "private"} {
				if !strings.Contains(all, why) {
					t.Errorf("no refusal says %q: %v", why, reasons)
				}
			}
			if hostIP != "" && !strings.Contains(all, "this host's own address") {
				t.Errorf("the host's own address %s was not refused as such: %v", hostIP, reasons)
			}
		})
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the host's service answered %d requests from the sandbox", n)
	}
	// Control: the same probe under network: host (by name, as a profile
	// may still choose) does reach the service — the attack is real and
	// the probe would see it.
	hostProf := filepath.Join(e.outDir, "host.yaml")
	os.WriteFile(hostProf, []byte("name: hostnet\nextends: default\nnetwork: host\n"), 0o644)
	r := e.run(t, []string{"--profile", hostProf}, "python3", "-c", publicProbe, port, hostIP)
	if !strings.Contains(string(r.stdout), "DIRECT OK") || hits.Load() == 0 {
		t.Errorf("control under network: host did not reach the host's service (the probe cannot see the attack):\n%s%s", r.stdout, r.stderr)
	}
	if !strings.Contains(string(r.stderr), "warning: network: host shares the host's network") {
		t.Errorf("network: host ran without the warning:\n%s", r.stderr)
	}
}
