package netctl

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Server is a session's control socket (Listen).
type Server struct {
	ln   *net.UnixListener
	dir  string
	uid  int
	done chan struct{}
}

// Listen makes session's folder (0700, the caller's) and its control
// socket. uid is the launching uid, the only one Serve answers.
func Listen(uid int, session string) (*Server, error) {
	sock, err := SocketPath(uid, session)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(sock)
	if err := privateDirs(uid, dir); err != nil {
		return nil, err
	}
	_ = os.Remove(sock) // a dead session's of the same id
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("control socket %s: %w", sock, err)
	}
	ln.SetUnlinkOnClose(true)
	return &Server{ln: ln, dir: dir, uid: uid, done: make(chan struct{})}, nil
}

// Path is the socket's path.
func (s *Server) Path() string { return s.ln.Addr().String() }

// privateDirs makes dir and the folders above it up to the base's
// fedmem-UID (or fedmem) folder, each 0700, and checks that each of them
// is a real directory owned by uid and reachable by no one else: a folder
// planted in a shared /tmp by another user is refused, never used.
func privateDirs(uid int, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("control folder: %w", err)
	}
	// Check dir and its parents that this package names: .../fedmem-UID
	// (or .../fedmem)/sessions/SESSION; root's /run/fedmem holds other
	// state and is left as it is.
	levels := 3
	if uid == 0 {
		levels = 2
	}
	for d, i := dir, 0; i < levels; d, i = filepath.Dir(d), i+1 {
		var st unix.Stat_t
		if err := unix.Lstat(d, &st); err != nil {
			return fmt.Errorf("control folder %s: %w", d, err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			return fmt.Errorf("control folder %s: not a directory (a link?)", d)
		}
		if int(st.Uid) != uid {
			return fmt.Errorf("control folder %s: owned by uid %d, not %d", d, st.Uid, uid)
		}
		if st.Mode&0o077 != 0 {
			if err := os.Chmod(d, 0o700); err != nil {
				return fmt.Errorf("control folder %s: mode %o: %w", d, st.Mode&0o777, err)
			}
		}
	}
	return nil
}

// Serve answers connections until Close: each one is checked (Check),
// then its one request is handed to allow, whose answer is sent back.
// allow returns what now holds, or an error.
func (s *Server) Serve(allow func(host string, p Peer) (string, error), refused func(p Peer, rule, why string)) {
	defer close(s.done)
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			return
		}
		s.one(c, allow, refused)
	}
}

func (s *Server) one(c *net.UnixConn, allow func(string, Peer) (string, error), refused func(Peer, string, string)) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	answer := func(r Response) {
		b, _ := json.Marshal(r)
		_, _ = c.Write(append(b, '\n'))
	}
	// The request first (a refused peer reads its answer, not EPIPE),
	// bounded; then the peer.
	line, err := bufio.NewReader(io.LimitReader(c, 4096)).ReadBytes('\n')
	if err != nil {
		return
	}
	p, rule, err := s.Check(c)
	if err != nil {
		refused(p, rule, err.Error())
		answer(Response{Error: err.Error(), Rule: rule})
		return
	}
	var req Request
	if err := json.Unmarshal(line, &req); err != nil || req.Op != "allow" {
		answer(Response{Error: fmt.Sprintf("bad request %q (want {\"op\":\"allow\",\"host\":H})", line), Rule: "bad-request"})
		return
	}
	what, err := allow(req.Host, p)
	if err != nil {
		refused(p, "bad-host", err.Error())
		answer(Response{Error: err.Error(), Rule: "bad-host"})
		return
	}
	answer(Response{OK: true, Rule: what})
}

// Check is the peer rule: SO_PEERCRED's uid must be the launching uid, and
// the peer must live in this process's user namespace (an unprivileged
// session's agent has the caller's uid seen from here, but its own user
// namespace). It returns the peer, the rule broken and why.
func (s *Server) Check(c *net.UnixConn) (Peer, string, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return Peer{}, "peer-uid", err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) { cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED) }); err != nil {
		return Peer{}, "peer-uid", err
	}
	if cerr != nil {
		return Peer{}, "peer-uid", fmt.Errorf("SO_PEERCRED: %w", cerr)
	}
	p := Peer{UID: int(cred.Uid), GID: int(cred.Gid), PID: int(cred.Pid)}
	if p.UID != s.uid {
		return p, "peer-uid", fmt.Errorf("operation not permitted: the SO_PEERCRED check: uid %d is not the session's launching uid %d (only the caller who started the session may change its network)", p.UID, s.uid)
	}
	self, err := os.Readlink("/proc/self/ns/user")
	if err != nil {
		return p, "peer-userns", fmt.Errorf("operation not permitted: own user namespace: %w", err)
	}
	peer, err := os.Readlink("/proc/" + strconv.Itoa(p.PID) + "/ns/user")
	if p.PID <= 0 || err != nil || peer != self {
		return p, "peer-userns", fmt.Errorf("operation not permitted: the SO_PEERCRED check: pid %d is not in the launcher's user namespace (%s, want %s: a process inside a sandbox)", p.PID, peer, self)
	}
	return p, "", nil
}

// Close stops Serve and removes the socket and the session's folder.
func (s *Server) Close() {
	_ = s.ln.Close()
	<-s.done
	_ = os.Remove(s.dir)
}
