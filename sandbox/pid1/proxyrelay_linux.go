package pid1

import (
	"fmt"
	"net"
	"os"
	"syscall"

	"github.com/fedmem/fedmem/sandbox"
	"golang.org/x/sys/unix"
)

// startProxyRelay listens on 127.0.0.1:port (HTTP) and 127.0.0.1:SocksPort
// (SOCKS5) inside the sandbox's network namespace and hands every accepted
// connection to fedmem-run's proxy, which tells the two protocols apart by
// their first byte: the accepted socket itself is sent over ctlFd
// (SCM_RIGHTS) and closed here, so the proxy reads and writes the agent's
// connection with no copy between (a socket pair spliced to it cost a
// download through the proxy as much CPU as the agent's own reads:
// test/bench -only cred). It runs in the init, before any layer is applied
// (the listeners exist before Landlock and seccomp, which keep them
// working).
func startProxyRelay(ctlFd, port int) error {
	ctl := os.NewFile(uintptr(ctlFd), "proxy-ctl")
	for _, p := range []int{port, sandbox.SocksPort} {
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
				go handOver(ctl, c)
			}
		}()
	}
	return nil
}

// handOver sends the agent's accepted connection to fedmem-run's proxy
// and closes the init's copy (the proxy holds its own).
func handOver(ctl *os.File, c net.Conn) {
	defer c.Close()
	sc, ok := c.(syscall.Conn)
	if !ok {
		return
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return
	}
	_ = raw.Control(func(fd uintptr) {
		_ = unix.Sendmsg(int(ctl.Fd()), []byte{0}, unix.UnixRights(int(fd)), nil, 0)
	})
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
