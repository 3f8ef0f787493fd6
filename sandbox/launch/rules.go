package launch

import (
	"github.com/fedmem/fedmem/profiles"
	"github.com/fedmem/fedmem/sandbox/netproxy"
)

// The profile's allow-list entries become the proxy's rules here, so that
// the proxy (sandbox/netproxy) never reads the profile schema.

// proxyRule is one allow-list entry, in the profile's grammar
// (profiles.ParseAllow), as the proxy's rule.
func proxyRule(s string) (netproxy.Rule, error) {
	e, err := profiles.ParseAllow(s)
	if err != nil {
		return netproxy.Rule{}, err
	}
	return ruleOf(e), nil
}

// ruleOf is one parsed allow-list entry as the proxy's rule.
func ruleOf(e profiles.AllowEntry) netproxy.Rule {
	return netproxy.Rule{Host: e.Host, Wildcard: e.Wildcard, Port: e.Port}
}

// proxyRules are parsed allow-list entries (a credential's hosts) as the
// proxy's rules; nil for none.
func proxyRules(es []profiles.AllowEntry) []netproxy.Rule {
	var out []netproxy.Rule
	for _, e := range es {
		out = append(out, ruleOf(e))
	}
	return out
}
