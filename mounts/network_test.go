package mounts

import (
	"errors"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/profiles"
)

// TestNetworkModeOwnNetNS pins the one own-netns decision both backends
// take: every mode but host, and a mode Build never makes ("") fails
// closed (oci.NewNetNS said no to it, the namespace backend yes).
func TestNetworkModeOwnNetNS(t *testing.T) {
	for m, want := range map[NetworkMode][2]bool{ // {own netns, proxied}
		NetworkNone: {true, false}, NetworkAllowlist: {true, true}, NetworkPublic: {true, true},
		NetworkHost: {false, false}, "": {true, false},
	} {
		if got := [2]bool{m.OwnNetNS(), m.Proxied()}; got != want {
			t.Errorf("%q: OwnNetNS, Proxied = %v, want %v", m, got, want)
		}
	}
}

// TestBuildTypesNetworkAndRequire: Build resolves an empty network mode to
// the profile default, refuses an unknown one naming the rule, and types
// require: — so no backend sees "" or a string of its own.
func TestBuildTypesNetworkAndRequire(t *testing.T) {
	p, _, err := profiles.Load("default")
	if err != nil {
		t.Fatal(err)
	}
	in := Input{Vault: "/v", Session: "s1", Workdir: "/w", Home: "/home/u"}
	p.Network, p.Require = "", []string{"landlock", "seccomp"}
	pl, err := Build(p.PlanRequest(), in)
	if err != nil {
		t.Fatal(err)
	}
	if pl.Network != profiles.NetworkPublic {
		t.Errorf("empty network: plan has %q, want the profile default %q", pl.Network, profiles.NetworkPublic)
	}
	if want := (Require{Landlock: true, Seccomp: true}); pl.Require != want {
		t.Errorf("require: plan has %+v, want %+v", pl.Require, want)
	}
	p.Network = "bridge"
	if _, err := Build(p.PlanRequest(), in); !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), `network "bridge"`) {
		t.Errorf("network bridge: err %v, want ErrPlan naming the mode", err)
	}
	p.Network, p.Require = profiles.NetworkNone, []string{"apparmor"}
	if _, err := Build(p.PlanRequest(), in); !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), `require: "apparmor"`) {
		t.Errorf("require apparmor: err %v, want ErrPlan naming the entry", err)
	}
}
