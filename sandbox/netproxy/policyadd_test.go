package netproxy

import (
	"context"
	"errors"
	"testing"
)

// TestPolicyAdd: a rule added to a running session's policy (fedmem net
// allow) lets exactly that host:port through, in both modes; in public
// mode a loopback literal it names is reached, the next port still not.
func TestPolicyAdd(t *testing.T) {
	for _, mode := range []Mode{Allowlist, Public} {
		p := &Policy{Mode: mode}
		if mode == Allowlist {
			p.Rules = []Rule{mustRule(t, "127.0.0.1:1")}
		}
		ctx := context.Background()
		if _, err := p.Resolve(ctx, "127.0.0.1", 8080); !errors.Is(err, ErrDenied) {
			t.Fatalf("mode %d before Add: %v, want denied", mode, err)
		}
		p.Add(mustRule(t, "127.0.0.1:8080"))
		if ap, err := p.Resolve(ctx, "127.0.0.1", 8080); err != nil || ap.String() != "127.0.0.1:8080" {
			t.Errorf("mode %d after Add: %v %v", mode, ap, err)
		}
		if _, err := p.Resolve(ctx, "127.0.0.1", 8081); !errors.Is(err, ErrDenied) {
			t.Errorf("mode %d: another port after Add: %v, want denied", mode, err)
		}
	}
}

func mustRule(t *testing.T, s string) Rule {
	t.Helper()
	r, err := ParseRule(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
