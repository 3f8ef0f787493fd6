package profiles

import (
	"strings"
	"testing"
)

// TestAllowValidation: profile validation takes the allow-list grammar
// (wildcards, optional port) and names the entry and the rule it breaks.
func TestAllowValidation(t *testing.T) {
	p := &Profile{Name: "x", Network: NetworkAllowlist, Allow: []string{"*.example.com", "github.com:22", "api.openai.com:443", "[2001:db8::1]"}}
	if err := p.Validate(); err != nil && strings.Contains(err.Error(), "allow") {
		t.Errorf("valid allow entries refused: %v", err)
	}
	for bad, why := range map[string]string{
		"*":           "not a DNS name",
		"*.com":       "at least two labels",
		"a.*.com":     "not a DNS name",
		"host:99999":  "port must be 1-65535",
		"*.10.0.0.1":  "not to addresses",
		"2001:db8::1": "brackets",
	} {
		p := &Profile{Name: "x", Network: NetworkAllowlist, Allow: []string{bad}}
		var msg string
		if err := p.Validate(); err != nil {
			msg = err.Error()
		}
		if !strings.Contains(msg, "allow") || !strings.Contains(msg, why) || !strings.Contains(msg, bad) {
			t.Errorf("%q: %q, want an allow error naming the entry and %q", bad, msg, why)
		}
	}
}

// TestWildcardNeverMatchesAddress: a wildcard entry made by hand (or by a
// grammar that let "*.0.0.1" through) never matches an IP literal by its
// suffix; ParseAllow refuses a numeric top-level label.
func TestWildcardNeverMatchesAddress(t *testing.T) {
	e := AllowEntry{Host: "0.0.1", Wildcard: true}
	for _, h := range []string{"127.0.0.1", "10.0.0.1"} {
		if e.Matches(h, 80) {
			t.Errorf("*.0.0.1 matches the address %s", h)
		}
	}
	if !(AllowEntry{Host: "example.com", Wildcard: true}).Matches("api.example.com", 443) {
		t.Errorf("*.example.com no longer matches api.example.com")
	}
	for _, s := range []string{"*.0.0.1", "*.168.1.1:80", "*.1.2"} {
		if _, err := ParseAllow(s); err == nil || !strings.Contains(err.Error(), "not to addresses") {
			t.Errorf("ParseAllow(%q): %v, want refused (a wildcard applies to names)", s, err)
		}
	}
}
