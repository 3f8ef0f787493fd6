package netproxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"

	"github.com/fedmem/fedmem/mounts/hostrule"
)

// Rule is one allow-list entry: a name, a *.domain wildcard or an IP
// literal, on one port or (Port 0) any port. The proxy's own type: the
// launcher (sandbox/launch) builds it from the profile's parsed allow list
// (profiles.AllowEntry, whose grammar checks every entry); the proxy never
// reads the profile. The fields keep their names on the wire to the
// credential helper (HelperCred.Hosts).
//
// Its fields, Matches and String are mounts/hostrule's Rule, the type the
// profile's parser (profiles.AllowEntry) returns too: the two cannot drift.
type Rule = hostrule.Rule

// Mode is what a Policy lets through.
type Mode int

const (
	// Allowlist: only the host:port pairs of Rules.
	Allowlist Mode = iota
	// Public: any host and port whose address is public unicast (Forbidden
	// says "") and not one of the host's own addresses.
	Public
)

// Policy decides where a connection may go. Both modes take one path: the
// name is resolved here, every candidate address is checked, and the
// address checked is the one returned for the dial (never a second
// resolution, which a rebinding DNS server could answer differently).
type Policy struct {
	Mode  Mode
	Rules []Rule
	// Self are the host's own addresses (HostAddrs), refused through a
	// name in both modes and through a literal in Public mode: a service
	// bound to 0.0.0.0 is reachable on them as on loopback.
	Self []netip.Addr
	// Resolver resolves names (nil: net.DefaultResolver).
	Resolver interface {
		LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
	}

	// added are the rules `fedmem net allow` gave the running session
	// (Add); they are checked like Rules, in both modes.
	mu    sync.RWMutex
	added []Rule
}

// Add lets the session reach one more host:port (a Rule), from now on:
// `fedmem net allow` (netctl). In Public mode it is how an address public
// refuses (a loopback or private literal) is reached on purpose.
func (p *Policy) Add(r Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.added = append(p.added, r)
}

// match is the first rule (the profile's, then the added ones) that
// matches h:port, or nil.
func (p *Policy) match(h string, port int) *Rule {
	for i := range p.Rules {
		if p.Rules[i].Matches(h, port) {
			return &p.Rules[i]
		}
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	for i := range p.added {
		if p.added[i].Matches(h, port) {
			r := p.added[i]
			return &r
		}
	}
	return nil
}

// ErrDenied is wrapped by every refusal.
var ErrDenied = errors.New("denied by the network policy")

// Resolve checks host:port against the policy and returns the address to
// dial. Allowlist: an IP-literal rule allows exactly that address, whatever
// its range; a name is resolved here and only public addresses are used.
// Public: any name or literal, but only a public address that is not the
// host's own.
func (p *Policy) Resolve(ctx context.Context, host string, port int) (netip.AddrPort, error) {
	c, err := p.Candidates(ctx, host, port)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return c[0], nil
}

// Candidates is Resolve's every permitted address, in the resolver's order:
// the proxy dials them in turn (an IPv6 address first on a host without an
// IPv6 route must not fail a name that also has an IPv4 one), each one
// checked, none resolved again.
func (p *Policy) Candidates(ctx context.Context, host string, port int) ([]netip.AddrPort, error) {
	one := func(ap netip.AddrPort, err error) ([]netip.AddrPort, error) {
		if err != nil {
			return nil, err
		}
		return []netip.AddrPort{ap}, nil
	}
	h := strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	if a, err := netip.ParseAddr(h); err == nil && a.Zone() == "" {
		h = a.Unmap().String() // a rule names 127.0.0.1, not ::ffff:127.0.0.1
	}
	if port < 1 || port > 65535 {
		return one(netip.AddrPort{}, fmt.Errorf("%w: port %d", ErrDenied, port))
	}
	allowlist := p.Mode == Allowlist
	if !allowlist {
		// An added rule makes its host an allow-list one: an IP literal
		// it names is reached whatever its range.
		allowlist = p.match(h, port) != nil
	}
	if allowlist {
		rule := p.match(h, port)
		if rule == nil {
			return one(netip.AddrPort{}, fmt.Errorf("%w: %s:%d is not in the profile's allow list", ErrDenied, h, port))
		}
		if a, err := netip.ParseAddr(h); err == nil {
			return one(netip.AddrPortFrom(a.Unmap(), uint16(port)), nil)
		}
	} else if a, err := netip.ParseAddr(h); err == nil {
		a = a.Unmap()
		if why := p.forbidden(a); why != "" {
			return one(netip.AddrPort{}, fmt.Errorf("%w: %s is %s (network: public reaches public addresses only)", ErrDenied, a, why))
		}
		return one(netip.AddrPortFrom(a, uint16(port)), nil)
	}
	if h == "" || strings.ContainsAny(h, "/*@ %") {
		return one(netip.AddrPort{}, fmt.Errorf("%w: bad host %q", ErrDenied, h))
	}
	r := p.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	addrs, err := r.LookupNetIP(ctx, "ip", h)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", h, err)
	}
	var forbidden []string
	var ok []netip.AddrPort
	for _, a := range addrs {
		a = a.Unmap()
		if why := p.forbidden(a); why != "" {
			forbidden = append(forbidden, a.String()+" ("+why+")")
			continue
		}
		ok = append(ok, netip.AddrPortFrom(a, uint16(port)))
	}
	if len(ok) > 0 {
		return ok, nil
	}
	hint := "name the address itself in the profile's allow list to allow it"
	if p.Mode == Public {
		hint = "network: public reaches public addresses only"
	}
	return nil, fmt.Errorf("%w: %s resolves only to forbidden addresses: %s (%s)", ErrDenied, h, strings.Join(forbidden, ", "), hint)
}

// forbidden is Forbidden plus the host's own addresses.
func (p *Policy) forbidden(a netip.Addr) string {
	if why := Forbidden(a); why != "" {
		return why
	}
	for _, s := range p.Self {
		if s.Unmap() == a {
			return "this host's own address"
		}
	}
	return ""
}

// HostAddrs lists the addresses of this host's interfaces (run it outside
// the sandbox, in the host's network namespace).
func HostAddrs() ([]netip.Addr, error) {
	ifas, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("list the host's addresses: %w", err)
	}
	var out []netip.Addr
	for _, ifa := range ifas {
		var ip net.IP
		switch v := ifa.(type) {
		case *net.IPNet:
			ip = v.IP
		case *net.IPAddr:
			ip = v.IP
		}
		if a, ok := netip.AddrFromSlice(ip); ok {
			out = append(out, a.Unmap())
		}
	}
	return out, nil
}

var metadata = []netip.Prefix{
	netip.MustParsePrefix("169.254.169.254/32"), // AWS, GCP, Azure, OpenStack
	netip.MustParsePrefix("100.100.100.200/32"), // Alibaba Cloud
	netip.MustParsePrefix("fd00:ec2::254/128"),  // AWS IPv6
}

var special = []struct {
	p   netip.Prefix
	why string
}{
	{netip.MustParsePrefix("100.64.0.0/10"), "carrier-grade NAT"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("0.0.0.0/8"), "this network"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64"},
}

// Forbidden says why an address may not be reached through a name, or ""
// when it is a public unicast address.
func Forbidden(a netip.Addr) string {
	for _, m := range metadata {
		if m.Contains(a) {
			return "cloud metadata"
		}
	}
	switch {
	case !a.IsValid():
		return "invalid"
	case a.IsUnspecified():
		return "unspecified"
	case a.IsLoopback():
		return "loopback"
	case a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast():
		return "link-local"
	case a.IsPrivate():
		return "private"
	case a.IsMulticast(), a.IsInterfaceLocalMulticast():
		return "multicast"
	}
	for _, s := range special {
		if s.p.Contains(a) {
			return s.why
		}
	}
	return ""
}
