package launch

import (
	"github.com/fedmem/fedmem/profiles"
	"github.com/fedmem/fedmem/sandbox/netproxy"
)

// The profile's allow-list entries become the proxy's rules here, so that
// the proxy (sandbox/netproxy) never reads the profile schema. Both are
// mounts/hostrule's Rule: the parsed entry is the rule the proxy enforces.

// proxyRule is one allow-list entry, in the profile's grammar
// (profiles.ParseAllow, which checks it), as the proxy's rule.
func proxyRule(s string) (netproxy.Rule, error) {
	return profiles.ParseAllow(s)
}

// proxyRules are parsed allow-list entries (a credential's hosts) as the
// proxy's rules; nil for none.
func proxyRules(es []profiles.AllowEntry) []netproxy.Rule {
	if len(es) == 0 {
		return nil
	}
	return es
}
