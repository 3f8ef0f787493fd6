package intercept

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/sandbox/netproxy"
)

// Main is fedmem-cred: it reads its netproxy.HelperConfig on stdin, makes
// the session CA, says hello on stdout (the CA's certificate), then serves
// each connection handed over on fd 3 until that socket closes. Events go
// to stdout, one JSON line each. It returns the process's exit code.
func Main() int {
	var cfg netproxy.HelperConfig
	out := json.NewEncoder(os.Stdout)
	var outMu sync.Mutex
	say := func(v any) {
		outMu.Lock()
		defer outMu.Unlock()
		_ = out.Encode(v)
	}
	if err := json.NewDecoder(io.LimitReader(os.Stdin, 1<<20)).Decode(&cfg); err != nil {
		say(netproxy.HelperHello{Error: "config: " + err.Error()})
		return 125
	}
	ca, key, pemBytes, err := NewCA(cfg.Session)
	if err != nil {
		say(netproxy.HelperHello{Error: "session CA: " + err.Error()})
		return 125
	}
	s := &Server{Creds: cfg.Creds, CA: ca, CAKey: key, OnEvent: func(e Event) { say(e) }}
	say(netproxy.HelperHello{CAPEM: string(pemBytes)})
	ctl := 3
	buf := make([]byte, 256<<10)
	oob := make([]byte, unix.CmsgSpace(4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(ctl, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil || (n == 0 && oobn == 0) {
			return 0
		}
		fd := -1
		if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil && len(msgs) == 1 {
			if fds, err := unix.ParseUnixRights(&msgs[0]); err == nil && len(fds) == 1 {
				fd = fds[0]
			}
		}
		var h netproxy.Handoff
		if err := json.Unmarshal(buf[:n], &h); err != nil || fd < 0 {
			if fd >= 0 {
				unix.Close(fd)
			}
			say(Event{Name: "network", Fields: map[string]any{"allowed": false, "reason": fmt.Sprintf("credential proxy: bad handoff (%v)", err)}})
			continue
		}
		f := os.NewFile(uintptr(fd), "intercepted")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			continue
		}
		var addrs []netip.AddrPort
		for _, a := range h.Addrs {
			if ap, err := netip.ParseAddrPort(a); err == nil {
				addrs = append(addrs, ap)
			}
		}
		go s.Serve(c, h.Pre, h.Host, h.Port, addrs)
	}
}
