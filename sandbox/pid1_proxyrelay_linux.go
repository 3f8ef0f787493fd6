package sandbox

import (
	"fmt"
	"net"
	"os"

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
		ln, err := listenLoopback(p)
		if err != nil {
			return fmt.Errorf("proxy relay: 127.0.0.1:%d: %w", p, err)
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

// listenLoopback listens on 127.0.0.1:port with plain system calls and
// wraps the socket as a net.Listener: net.Listen would first probe the
// IPv4/IPv6 stack, MPTCP and somaxconn, at every start of the sandbox
// (issue 9). SO_REUSEADDR as net.Listen sets it.
func listenLoopback(port int) (net.Listener, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "proxy-listener")
	defer f.Close() // net.FileListener holds its own copy
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_REUSEADDR, 1); err != nil {
		return nil, fmt.Errorf("setsockopt(SO_REUSEADDR): %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrInet4{Port: port, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return nil, fmt.Errorf("bind: %w", err)
	}
	if err := unix.Listen(fd, unix.SOMAXCONN); err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	return net.FileListener(f)
}
