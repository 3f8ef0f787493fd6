package netproxy

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"
)

// SOCKS5 (RFC 1928), the subset a TCP client needs: no authentication,
// CONNECT only, and the three address types (IPv4, a domain name, IPv6).
// A domain name is resolved here by the policy (socks5h:// in curl's
// terms), never by the client: the sandbox has no resolver of its own.
// BIND and UDP ASSOCIATE are refused (command not supported): they would
// open a listening port or a datagram path the policy does not see.
const (
	socksVersion      = 5
	socksNoAuth       = 0
	socksNoAcceptable = 0xff
	socksConnect      = 1
	atypIPv4          = 1
	atypDomain        = 3
	atypIPv6          = 4

	socksSucceeded       = 0
	socksGeneralFailure  = 1
	socksNotAllowed      = 2
	socksHostUnreachable = 4
	socksCmdUnsupported  = 7
	socksAtypUnsupported = 8
)

// serveSOCKS handles one SOCKS5 client whose first byte was the version.
func (p *Proxy) serveSOCKS(c net.Conn, br *bufio.Reader) {
	var hdr [2]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		return
	}
	noAuth := false
	for _, m := range methods {
		noAuth = noAuth || m == socksNoAuth
	}
	if !noAuth {
		p.decide(Decision{Method: "SOCKS5", Reason: "bad request: the client offers no method without authentication"})
		_, _ = c.Write([]byte{socksVersion, socksNoAcceptable})
		return
	}
	if _, err := c.Write([]byte{socksVersion, socksNoAuth}); err != nil {
		return
	}
	// Request: VER CMD RSV ATYP DST.ADDR DST.PORT
	var req [4]byte
	if _, err := io.ReadFull(br, req[:]); err != nil {
		return
	}
	if req[0] != socksVersion {
		p.decide(Decision{Method: "SOCKS5", Reason: fmt.Sprintf("bad request: version %d in the request", req[0])})
		socksReply(c, socksGeneralFailure)
		return
	}
	host, err := readSOCKSAddr(br, req[3])
	if err != nil {
		p.decide(Decision{Method: "SOCKS5", Reason: "bad request: " + err.Error()})
		socksReply(c, socksAtypUnsupported)
		return
	}
	var pb [2]byte
	if _, err := io.ReadFull(br, pb[:]); err != nil {
		return
	}
	port := int(binary.BigEndian.Uint16(pb[:]))
	if req[1] != socksConnect {
		p.decide(Decision{Method: "SOCKS5", Host: host, Port: port, Reason: fmt.Sprintf("SOCKS command %d: only CONNECT is supported", req[1])})
		socksReply(c, socksCmdUnsupported)
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	if err := p.credentialTarget("SOCKS5", host, port); err != nil {
		socksReply(c, socksNotAllowed)
		return
	}
	if p.Credentials.intercepts(host, port) {
		p.socksIntercept(c, br, host, port)
		return
	}
	up, code, err := p.connect("SOCKS5", host, port, nil)
	if err != nil {
		rep := byte(socksHostUnreachable)
		if code == 403 {
			rep = socksNotAllowed
		}
		socksReply(c, rep)
		return
	}
	defer up.Close()
	socksReply(c, socksSucceeded)
	// Bytes the client pipelined after its request.
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n)
		if _, err := up.Write(b); err != nil {
			return
		}
	}
	Splice(c, up)
}

// readSOCKSAddr reads DST.ADDR of the given type as a host string.
func readSOCKSAddr(br *bufio.Reader, atyp byte) (string, error) {
	switch atyp {
	case atypIPv4:
		var b [4]byte
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return "", err
		}
		return netip.AddrFrom4(b).String(), nil
	case atypIPv6:
		var b [16]byte
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return "", err
		}
		return netip.AddrFrom16(b).String(), nil
	case atypDomain:
		n, err := br.ReadByte()
		if err != nil {
			return "", err
		}
		if n == 0 {
			return "", fmt.Errorf("empty domain name")
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			return "", err
		}
		return string(b), nil
	}
	return "", fmt.Errorf("address type %d is not IPv4, a domain name or IPv6", atyp)
}

// socksReply writes a reply with a zero IPv4 bound address: clients of a
// CONNECT do not use BND.ADDR, and the proxy's own address is no business
// of the sandbox.
func socksReply(c net.Conn, rep byte) {
	_, _ = c.Write([]byte{socksVersion, rep, 0, atypIPv4, 0, 0, 0, 0, 0, 0})
}
