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
	r := landlockRules(pl)
	if !slices.Equal(r.UnixSockets, pl.UnixSockets) {
		t.Fatalf("landlock UnixSockets %v, want the plan's %v", r.UnixSockets, pl.UnixSockets)
	}
	if r := landlockRules(&mounts.Plan{Writable: []string{"/w"}}); len(r.UnixSockets) != 0 {
		t.Fatalf("no unix_sockets, but rules grant %v", r.UnixSockets)
	}
}

// TestHomeTopEntryHint: a refused write at the top of a home in a writable
// path or under one of its dot-entries gets the hint naming rule
// home-config-readonly; one inside a non-dot entry (a project's own
// dot-file) or another home does not.
func TestHomeTopEntryHint(t *testing.T) {
	pl := &mounts.Plan{HomeTop: "/home/u"}
	for p, want := range map[string]bool{
		"/home/u": true, "/home/u/.bashrc": true, "/home/u/.config/nvim/init.lua": true, "/home/u/new.txt": true,
		"/home/u/proj/x": false, "/home/u/proj/.env": false, "/home/v/.bashrc": false, "/home/uu/.bashrc": false,
	} {
		if got := homeTopEntry(pl, p); got != want {
			t.Errorf("homeTopEntry(%s) = %v, want %v", p, got, want)
		}
	}
	if homeTopEntry(&mounts.Plan{}, "/home/u/.bashrc") {
		t.Error("hint without a home in a writable path")
	}
}
