// Package hostrule is one network allow-list rule — a name, a *.domain
// wildcard or an IP literal, on one port or any — and its match: the one
// definition the profile schema (profiles.AllowEntry, which parses and
// checks the grammar) and the proxy (netproxy.Rule, which enforces it)
// share, so that what a profile allows and what the proxy lets through can
// never drift apart. It imports no fedmem package: the gate (through
// profiles) and the proxy may both link it.
package hostrule

import (
	"net/netip"
	"strconv"
	"strings"
)

// Rule is one allow-list entry, parsed. The fields keep their names on the
// wire to the credential helper (netproxy.HelperCred.Hosts).
type Rule struct {
	// Host is the name (lower case, no final dot) or the IP literal; for
	// a wildcard, the suffix after "*." (example.com for *.example.com).
	Host string
	// Wildcard: Host's subdomains match, Host itself does not.
	Wildcard bool
	// Port is 1-65535, or 0 for any port.
	Port int
}

// Matches says whether a connection to host (lower case, no final dot) on
// port is allowed by this rule.
func (r Rule) Matches(host string, port int) bool {
	if r.Port != 0 && r.Port != port {
		return false
	}
	if r.Wildcard {
		// A wildcard applies to names, never to an address: "*.0.0.1"
		// (whose domain is no address) must not match 127.0.0.1 by its
		// suffix (TestRT18WildcardNeverMatchesAddress).
		if _, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
			return false
		}
		return strings.HasSuffix(host, "."+r.Host)
	}
	return host == r.Host
}

// String is the rule in the profile's allow-list grammar.
func (r Rule) String() string {
	h := r.Host
	if r.Wildcard {
		h = "*." + h
	}
	if a, err := netip.ParseAddr(r.Host); err == nil && a.Is6() {
		h = "[" + h + "]"
	}
	if r.Port == 0 {
		return h
	}
	return h + ":" + strconv.Itoa(r.Port)
}
