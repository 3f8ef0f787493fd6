package sandbox

import (
	"fmt"
	"net"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/sandbox/netproxy"
)

// startProxyRelay listens on 127.0.0.1:port (HTTP) and 127.0.0.1:SocksPort
// (SOCKS5) inside the sandbox's network namespace and hands every accepted
// connection to fedmem-run's proxy, which tells the two protocols apart by
// their first byte: a fresh socket pair per connection, one end sent over
// ctlFd (SCM_RIGHTS), the bytes spliced between the agent's connection and
// the other end. It runs in the init, before any layer is applied (the
// listeners exist before Landlock and seccomp, which keep them working).
func startProxyRelay(ctlFd, port int) error {
	ctl := os.NewFile(uintptr(ctlFd), "proxy-ctl")
	for _, p := range []int{port, SocksPort} {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			return fmt.Errorf("proxy relay: %w", err)
		}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go relayOne(ctl, c)
			}
		}()
	}
	return nil
}

func relayOne(ctl *os.File, c net.Conn) {
	defer c.Close()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return
	}
	err = unix.Sendmsg(int(ctl.Fd()), []byte{0}, unix.UnixRights(fds[1]), nil, 0)
	unix.Close(fds[1])
	if err != nil {
		unix.Close(fds[0])
		return
	}
	f := os.NewFile(uintptr(fds[0]), "proxy-conn")
	up, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return
	}
	defer up.Close()
	netproxy.Splice(c, up)
}
