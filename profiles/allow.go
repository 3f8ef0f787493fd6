package profiles

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/fedmem/fedmem/mounts/hostrule"
)

// AllowEntry is one entry of a profile's allow list, parsed. The grammar
// follows sandbox-runtime's allowedDomains, with an optional port:
//
//	api.example.com        that name, any port
//	api.example.com:443    that name, port 443
//	*.example.com          every name below example.com (not example.com
//	                       itself: list it too if it is wanted), any port
//	*.example.com:22       the same, port 22
//	192.0.2.7:8080         an IP literal (IPv6 in brackets: [2001:db8::1]:443)
//
// A wildcard is only a leading "*." followed by at least two labels ("*",
// "*.com" and "a.*.com" are refused): an entry never opens a whole
// top-level domain. Names are compared in lower case without a final dot.
//
// Its fields, Matches and String are mounts/hostrule's Rule: the proxy
// enforces the same type.
type AllowEntry = hostrule.Rule

// ParseAllow reads one allow-list entry (see AllowEntry).
func ParseAllow(s string) (AllowEntry, error) {
	raw := strings.TrimSpace(s)
	host, port := raw, ""
	if strings.HasPrefix(raw, "[") && strings.HasSuffix(raw, "]") {
		host = raw[1 : len(raw)-1]
	} else if h, p, err := net.SplitHostPort(raw); err == nil {
		if p == "" {
			return AllowEntry{}, fmt.Errorf("allow %q: empty port (drop the colon for any port)", s)
		}
		host, port = h, p
	} else if strings.HasPrefix(raw, "[") || strings.Count(raw, ":") == 1 {
		return AllowEntry{}, fmt.Errorf("allow %q: want host, host:port, *.domain or *.domain:port: %v", s, err)
	}
	var e AllowEntry
	if port != "" {
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 {
			return AllowEntry{}, fmt.Errorf("allow %q: port must be 1-65535", s)
		}
		e.Port = p
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		e.Wildcard = true
		host = rest
		if strings.Count(host, ".") < 1 {
			return AllowEntry{}, fmt.Errorf("allow %q: a wildcard needs a domain of at least two labels (*.example.com), never a whole top-level domain", s)
		}
		if tld := host[strings.LastIndex(host, ".")+1:]; strings.Trim(tld, "0123456789") == "" {
			return AllowEntry{}, fmt.Errorf("allow %q: a wildcard applies to names, not to addresses (a numeric top-level label is part of an address)", s)
		}
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if e.Wildcard {
			return AllowEntry{}, fmt.Errorf("allow %q: a wildcard applies to names, not to addresses", s)
		}
		if a.Zone() != "" {
			return AllowEntry{}, fmt.Errorf("allow %q: no zone in an address", s)
		}
		if e.Port == 0 && a.Is6() && !strings.HasPrefix(raw, "[") {
			return AllowEntry{}, fmt.Errorf("allow %q: write IPv6 addresses in brackets ([%s] or [%s]:443)", s, host, host)
		}
		e.Host = a.Unmap().String()
		return e, nil
	}
	if !validName(host) {
		return AllowEntry{}, fmt.Errorf("allow %q: %q is not a DNS name, *.domain or IP address", s, host)
	}
	e.Host = host
	return e, nil
}

// validName: letters, digits, '-' and '_' in dot-separated labels of 1-63
// bytes, 253 bytes at most.
func validName(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, l := range strings.Split(h, ".") {
		if l == "" || len(l) > 63 {
			return false
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}
