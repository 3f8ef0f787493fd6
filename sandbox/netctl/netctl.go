// Package netctl is a running session's network control socket: `fedmem
// net allow SESSION HOST` asks the session's fedmem-run, over a unix
// socket in the caller's runtime folder, to let the session reach one more
// host. The server (fedmem-run's launcher, outside the sandbox) checks the
// peer with SO_PEERCRED: the session's launching uid only, from the
// launcher's own user namespace (never a process inside the sandbox, whose
// uid an unprivileged session maps to the caller's). The socket itself is
// not visible inside: its folder is under /run (an empty directory
// inside) for root, $XDG_RUNTIME_DIR (under /run/user) or the host's /tmp
// (a private tmpfs inside) for the others, and 0700.
//
// The package has no sandbox imports: the gate-side `fedmem` links it as a
// protocol client (test/boundary).
package netctl

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// SocketName is the control socket's name in the session's folder.
const SocketName = "control.sock"

// sessionRe is a session id (vault.NewSessionID's shape and --session's).
// Compiled at its first use, not at package init: every fedmem-run
// process (the launcher, the sandbox's pid 1, the user-namespace holder)
// links this package, and the {0,63} repetition made its compile 0.4 ms
// of each one's start-up.
var sessionRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`) })

// BaseDir is the folder of uid's sessions' control folders: for root
// /run/fedmem/sessions; for others $XDG_RUNTIME_DIR/fedmem/sessions when
// XDG_RUNTIME_DIR is set (an absolute path), else
// $TMPDIR/fedmem-UID/sessions.
func BaseDir(uid int) string {
	if uid == 0 {
		return "/run/fedmem/sessions"
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "fedmem", "sessions")
	}
	return filepath.Join(os.TempDir(), "fedmem-"+strconv.Itoa(uid), "sessions")
}

// SocketPath is session's control socket for uid.
func SocketPath(uid int, session string) (string, error) {
	if !sessionRe().MatchString(session) {
		return "", fmt.Errorf("session %q is not a session id", session)
	}
	return filepath.Join(BaseDir(uid), session, SocketName), nil
}

// Request is one line the client sends.
type Request struct {
	Op   string `json:"op"`   // "allow"
	Host string `json:"host"` // an allow entry: host, host:port, *.domain[:port], an IP literal
}

// Response is the server's one line back.
type Response struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	// Rule is the error's rule (peer-uid, peer-userns, bad-host) or, for
	// OK, what now holds.
	Rule string `json:"rule,omitempty"`
}

// ErrRefused wraps every refusal the server answers.
var ErrRefused = errors.New("refused by the session")

// Allow asks uid's session to let its agent reach host.
func Allow(ctx context.Context, uid int, session, host string) (string, error) {
	sock, err := SocketPath(uid, session)
	if err != nil {
		return "", err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", sock)
	if err != nil {
		if errors.Is(err, syscall.ENOENT) {
			return "", fmt.Errorf("session %s: no control socket %s (is the session running, under your uid, with network allowlist or public?): %w", session, sock, err)
		}
		return "", fmt.Errorf("session %s: %w", session, err)
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	} else {
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	}
	b, _ := json.Marshal(Request{Op: "allow", Host: host})
	if _, err := c.Write(append(b, '\n')); err != nil {
		return "", fmt.Errorf("session %s: %w", session, err)
	}
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		return "", fmt.Errorf("session %s: no answer: %w", session, err)
	}
	var r Response
	if err := json.Unmarshal(line, &r); err != nil {
		return "", fmt.Errorf("session %s: bad answer %q: %w", session, line, err)
	}
	if !r.OK {
		return "", fmt.Errorf("%w [%s]: %s", ErrRefused, r.Rule, r.Error)
	}
	return r.Rule, nil
}

// Peer is who connected, from SO_PEERCRED.
type Peer struct {
	UID, GID, PID int
}
