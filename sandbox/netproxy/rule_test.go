package netproxy

import "github.com/fedmem/fedmem/profiles"

// ParseRule reads one allow-list entry in the profile's grammar as a Rule,
// the way the launcher does (sandbox/launch: proxyRule), for the tests
// here: the proxy itself never parses the profile.
func ParseRule(s string) (Rule, error) {
	e, err := profiles.ParseAllow(s)
	return Rule{Host: e.Host, Wildcard: e.Wildcard, Port: e.Port}, err
}
