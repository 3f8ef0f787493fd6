package netctl

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/fedmem/fedmem/test/testutil"
)

// TestPeerUserNamespaceRefused: a process in another user namespace whose
// uid maps to the launching uid (what an unprivileged session's agent is,
// seen from its launcher) is refused by the SO_PEERCRED check's second
// rule [peer-userns] and adds nothing; the launching uid in the
// launcher's namespace is answered.
func TestPeerUserNamespaceRefused(t *testing.T) {
	testutil.RequireRoot(t) // unshare -U -r as root always maps uid 0 back to 0
	b := make([]byte, 6)
	rand.Read(b)
	session := "nettest-" + hex.EncodeToString(b)
	srv, err := Listen(os.Getuid(), session)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var allowed, refused []string
	go srv.Serve(func(host string, p Peer) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		allowed = append(allowed, host)
		return "ok " + host, nil
	}, func(p Peer, rule, why string) {
		mu.Lock()
		defer mu.Unlock()
		refused = append(refused, rule)
	})
	defer srv.Close()
	st, err := os.Stat(strings.TrimSuffix(srv.Path(), "/"+SocketName))
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("session folder: %v %v, want 0700", st.Mode(), err)
	}
	py := `import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(b'{"op":"allow","host":"evil.example:443"}\n')
print(s.makefile().readline())`
	out, err := exec.Command("unshare", "-U", "-r", "python3", "-c", py, srv.Path()).CombinedOutput()
	if err != nil {
		t.Fatalf("unshare -U -r python3: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `"rule":"peer-userns"`) || !strings.Contains(string(out), "SO_PEERCRED") {
		t.Errorf("a peer in another user namespace: %s; want refused [peer-userns]", out)
	}
	what, err := Allow(context.Background(), os.Getuid(), session, "good.example:443")
	if err != nil || what != "ok good.example:443" {
		t.Errorf("Allow from the launcher's namespace: %q %v", what, err)
	}
	if _, err := Allow(context.Background(), os.Getuid(), "../x", "h"); err == nil {
		t.Error("a session id with a slash was accepted")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(allowed) != 1 || allowed[0] != "good.example:443" || len(refused) != 1 || refused[0] != "peer-userns" {
		t.Errorf("allowed %q, refused %q", allowed, refused)
	}
}
