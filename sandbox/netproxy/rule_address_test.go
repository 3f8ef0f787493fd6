package netproxy

import "testing"

// TestProxyWildcardNeverMatchesAddress: the rule the proxy enforces is the
// profile's (mounts/hostrule): a wildcard never matches an IP literal by
// its suffix. The proxy once kept its own copy of the match, without the
// red team's fix for "*.0.0.1" against 127.0.0.1
// (profiles: TestWildcardNeverMatchesAddress).
func TestProxyWildcardNeverMatchesAddress(t *testing.T) {
	r := Rule{Host: "0.0.1", Wildcard: true}
	for _, host := range []string{"127.0.0.1", "10.0.0.1", "[::ffff:127.0.0.1]"} {
		if r.Matches(host, 80) {
			t.Errorf("%s matches %s", r, host)
		}
	}
	if !(Rule{Host: "example.com", Wildcard: true}).Matches("api.example.com", 443) {
		t.Errorf("*.example.com does not match api.example.com")
	}
}
