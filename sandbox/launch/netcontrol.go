package launch

import (
	"fmt"
	"os"
	"sync"

	"github.com/fedmem/fedmem/sandbox/netctl"
	"github.com/fedmem/fedmem/sandbox/netproxy"
)

// netControl is a proxied session's control socket (netctl): `fedmem net
// allow SESSION HOST`, run by the session's launching uid from outside,
// adds HOST to the running session's policy. Each request, granted or
// refused, is a net-allow event; the granted ones are said after the agent
// exits and listed in the report.
type netControl struct {
	srv     *netctl.Server
	once    sync.Once
	mu      sync.Mutex
	allowed []string
}

// startNetControl listens on the session's control socket. A socket that
// cannot be made is a warning, not a refusal: the session runs with its
// profile's policy only.
func startNetControl(session string, pol *netproxy.Policy, emit func(string, map[string]any)) (*netControl, error) {
	srv, err := netctl.Listen(os.Getuid(), session)
	if err != nil {
		return nil, err
	}
	nc := &netControl{srv: srv}
	go srv.Serve(func(host string, p netctl.Peer) (string, error) {
		r, err := proxyRule(host)
		if err != nil {
			return "", err
		}
		pol.Add(r)
		nc.mu.Lock()
		nc.allowed = append(nc.allowed, host)
		nc.mu.Unlock()
		emit("net-allow", map[string]any{"host": host, "allowed": true, "uid": p.UID, "pid": p.PID,
			"reason": fmt.Sprintf("fedmem net allow by uid %d (pid %d)", p.UID, p.PID)})
		return "session " + session + " now reaches " + host, nil
	}, func(p netctl.Peer, rule, why string) {
		emit("net-allow", map[string]any{"allowed": false, "uid": p.UID, "pid": p.PID, "rule": rule, "reason": why})
	})
	return nc, nil
}

// close removes the socket; it returns the hosts allowed during the
// session.
func (nc *netControl) close() []string {
	if nc == nil {
		return nil
	}
	nc.once.Do(nc.srv.Close)
	nc.mu.Lock()
	defer nc.mu.Unlock()
	return nc.allowed
}
