package escape

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// netAllowAgent asks for a host its allow list lacks, tries the session's
// control socket by its host path, says "waiting", and after a line on
// stdin asks for the host again.
const netAllowAgent = `
import errno, os, socket, sys, urllib.request
port, sock = sys.argv[1], os.path.join(sys.argv[2], os.environ["FEDMEM_SESSION"], "control.sock")
def get(u):
    try:
        return "OK " + urllib.request.build_opener().open(u, timeout=10).read().decode()
    except Exception as e:
        return "ERR %s" % e
print("BEFORE", get("http://127.0.0.1:%s/x" % port), flush=True)
try:
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    print("CONTROL connected", flush=True)
except OSError as e:
    print("CONTROL", errno.errorcode.get(e.errno, e.errno), os.path.exists(os.path.dirname(os.path.dirname(sock))), flush=True)
print("SESSION", os.environ["FEDMEM_SESSION"], flush=True)
print("waiting", flush=True)
sys.stdin.readline()
print("AFTER", get("http://127.0.0.1:%s/x" % port), flush=True)
`

// TestNetAllowRunningSession: under network: allowlist the agent is
// refused a host its profile does not list (a network event names it);
// `fedmem net allow SESSION HOST` from another terminal by another uid
// (root) is refused by the SO_PEERCRED check and changes nothing; the same
// command by the session's launching uid lets the running agent reach the
// host (a net-allow event, the report's net_allowed). The agent itself
// cannot reach the control socket: its folder does not exist inside (the
// host's /tmp is a private tmpfs there: ENOENT). On the old code there was
// no control socket and the second request stayed refused.
func TestNetAllowRunningSession(t *testing.T) {
	netAllowSession(t, setup(t, layout{name: "beside/user", gateOwned: true, user: true}))
}

// TestNetAllowRootSession: the same for a root caller's session (every
// backend: the container backends run only for root). Its socket is under
// /run/fedmem/sessions, an empty /run inside; another uid cannot even
// reach it (the folder is root's, 0700: EACCES) and adds nothing.
func TestNetAllowRootSession(t *testing.T) {
	netAllowSession(t, setup(t, layout{name: "beside/root"}))
}

func netAllowSession(t *testing.T, e *env) {
	launcher, other := agentUID, 0
	if !e.l.user {
		launcher, other = 0, agentUID
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "served "+r.URL.Path) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	target := "127.0.0.1:" + port
	prof := filepath.Join(e.outDir, "locked.yaml")
	must(t, os.WriteFile(prof, []byte("name: locked\nextends: default\nnetwork: allowlist\nallow: [\"127.0.0.1:1\"]\n"), 0o644))
	must(t, os.Chown(prof, launcher, launcher))
	evs := filepath.Join(e.outDir, "netallow-events.jsonl")
	report := filepath.Join(e.outDir, "netallow-report.json")
	// fedmem-run runs as agentUID with no XDG_RUNTIME_DIR nor TMPDIR
	// (env.command): its sockets are under /tmp/fedmem-UID/sessions; as
	// root, under /run/fedmem/sessions.
	base := filepath.Join("/tmp", "fedmem-"+strconv.Itoa(agentUID), "sessions")
	if launcher == 0 {
		base = "/run/fedmem/sessions"
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := e.command(ctx, report, []string{"--profile", prof, "--events", evs}, "python3", "-c", netAllowAgent, port, base)
	stdin, err := cmd.StdinPipe()
	must(t, err)
	out, err := cmd.StdoutPipe()
	must(t, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	must(t, cmd.Start())
	said := map[string]string{}
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		said[k] = v
		if k == "waiting" {
			break
		}
	}
	if _, ok := said["waiting"]; !ok {
		stdin.Close()
		cmd.Wait()
		t.Fatalf("agent did not reach its wait: %q\n%s", said, stderr.Bytes())
	}
	t.Logf("agent: %q", said)
	session := said["SESSION"]
	if !strings.Contains(said["BEFORE"], "403") {
		t.Errorf("before net allow: %q, want the proxy's 403 (%s is not in the allow list)", said["BEFORE"], target)
	}
	if said["CONTROL"] != "ENOENT False" {
		t.Errorf("BREACH? the agent's connect to the control socket: %q, want ENOENT with its folder absent (the host's /tmp is private inside)", said["CONTROL"])
	}
	refused := false
	for _, m := range eventsOf(t, evs, "network") {
		if m["allowed"] == false && m["host"] == "127.0.0.1" && m["port"] == float64(mustAtoi(t, port)) {
			refused = true
		}
	}
	if !refused {
		t.Errorf("no refused network event names %s", target)
	}

	fedmem := func(uid int) (int, string) {
		name, args := e.bins.Fedmem, []string{"net", "allow", "--uid", strconv.Itoa(launcher), session, target}
		if uid != 0 {
			args = append([]string{"--reuid", strconv.Itoa(uid), "--regid", strconv.Itoa(uid), "--clear-groups", "--inh-caps=-all", "--", name}, args...)
			name = "setpriv"
		}
		c := exec.CommandContext(ctx, name, args...)
		c.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME=" + e.home, "LANG=C"}
		var b bytes.Buffer
		c.Stdout, c.Stderr = &b, &b
		return exitCode(c.Run()), b.String()
	}
	// Another uid: root, which may open any socket, is refused by the
	// peer check and adds nothing; for a root session, uid agentUID
	// cannot reach the socket at all.
	code, msg := fedmem(other)
	t.Logf("fedmem net allow as uid %d: %d %s", other, code, msg)
	if other == 0 && (code != 1 || !strings.Contains(msg, "SO_PEERCRED") || !strings.Contains(msg, "not permitted") || !strings.Contains(msg, "[peer-uid]")) {
		t.Errorf("fedmem net allow by uid 0 for uid %d's session: exit %d %q; want 1, refused by the SO_PEERCRED check [peer-uid]", launcher, code, msg)
	}
	if other != 0 && (code != 1 || !strings.Contains(msg, "permission denied")) {
		t.Errorf("fedmem net allow by uid %d for root's session: exit %d %q; want 1, permission denied (the folder is root's, 0700)", other, code, msg)
	}
	code, msg = fedmem(launcher)
	t.Logf("fedmem net allow as uid %d: %d %s", launcher, code, msg)
	if code != 0 || !strings.Contains(msg, "now reaches "+target) {
		t.Errorf("fedmem net allow by the launching uid: exit %d %q, want 0", code, msg)
	}
	stdin.Write([]byte("go\n"))
	stdin.Close()
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), " ")
		said[k] = v
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("fedmem-run: %v\n%s", err, stderr.Bytes())
	}
	if !strings.Contains(said["AFTER"], "OK served /x") {
		t.Errorf("after fedmem net allow: %q, want the server's answer", said["AFTER"])
	}
	var granted, denied int
	for _, m := range eventsOf(t, evs, "net-allow") {
		if m["allowed"] == true && m["host"] == target && m["uid"] == float64(launcher) {
			granted++
		}
		if m["allowed"] == false && m["rule"] == "peer-uid" && m["uid"] == float64(0) {
			denied++
		}
	}
	wantDenied := 1 // root's attempt on a user's session reached the check
	if other != 0 {
		wantDenied = 0 // the other uid never reached the socket
	}
	if granted != 1 || denied != wantDenied {
		t.Errorf("net-allow events: %d granted to uid %d, %d refused to uid 0; want 1 and %d", granted, launcher, denied, wantDenied)
	}
	var rep struct {
		NetAllowed []string `json:"net_allowed"`
	}
	b, err := os.ReadFile(report)
	must(t, err)
	must(t, json.Unmarshal(b, &rep))
	if len(rep.NetAllowed) != 1 || rep.NetAllowed[0] != target {
		t.Errorf("report net_allowed %q, want [%s]", rep.NetAllowed, target)
	}
	if !strings.Contains(stderr.String(), "fedmem net allow added "+target) {
		t.Errorf("stderr after the agent does not name the host added:\n%s", stderr.Bytes())
	}
	if _, err := os.Stat(filepath.Join(base, session)); !os.IsNotExist(err) {
		t.Errorf("the session's control folder outlives it: %v", err)
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	must(t, err)
	return n
}
