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
