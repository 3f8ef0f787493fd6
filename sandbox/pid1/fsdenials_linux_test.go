package pid1

import (
	"testing"

	"github.com/fedmem/fedmem/mounts"
)

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
