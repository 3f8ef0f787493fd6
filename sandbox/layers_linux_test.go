package sandbox

import (
	"slices"
	"testing"

	"github.com/fedmem/fedmem/mounts"
)

// TestLandlockRulesGrantListedSockets: from Landlock ABI 9 connect(2) to a
// pathname socket served outside the sandbox needs the resolve-unix
// right; the rules grant it to the plan's unix_sockets and nothing else
// (before, no rule granted it: every listed socket would have been refused
// there).
func TestLandlockRulesGrantListedSockets(t *testing.T) {
	pl := &mounts.Plan{Writable: []string{"/w"}, UnixSockets: []string{"/srv/app/x.sock", "/run/z.sock"}}
	r := LandlockRules(pl)
	if !slices.Equal(r.UnixSockets, pl.UnixSockets) {
		t.Fatalf("landlock UnixSockets %v, want the plan's %v", r.UnixSockets, pl.UnixSockets)
	}
	if r := LandlockRules(&mounts.Plan{Writable: []string{"/w"}}); len(r.UnixSockets) != 0 {
		t.Fatalf("no unix_sockets, but rules grant %v", r.UnixSockets)
	}
}
