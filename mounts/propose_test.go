package mounts

import (
	"slices"
	"strings"
	"testing"

	"github.com/fedmem/fedmem/profiles"
)

// TestProposedWorkdirPlan: with `workdir: propose` (strict) the workdir's
// mount asks for an overlay capped at limits.workdir_bytes, stays in the
// writable paths (Landlock) and gets no persistence holds, placeholders or
// after-session candidates (nothing there reaches the real tree; the
// proposal flags them); with the default profile the same tree is held.
func TestProposedWorkdirPlan(t *testing.T) {
	tree := []string{"/w/", "/w/.git/", "/w/.git/hooks/", "/w/.git/config", "/w/.envrc", "/home/u/", "/v/", "/v/.git/"}
	build := func(name string) *Plan {
		p, _, err := profiles.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		pl, err := Build(p.PlanRequest(), Input{Vault: "/v", Session: "s1", Workdir: "/w", Home: "/home/u", Exists: fakeHost(tree...), List: fakeList(tree...)})
		if err != nil {
			t.Fatal(err)
		}
		return pl
	}
	pl := build("strict")
	m := pl.ProposedWorkdir()
	if m == nil || m.Kind != BindRW || m.Target != "/w" || m.Size != int64(profiles.DefaultWorkdirBytes) || !strings.HasPrefix(m.Why, "workdir: a proposal") {
		t.Fatalf("proposed workdir mount %+v", m)
	}
	if !strings.Contains(strings.Join(pl.Writable, " "), "/w") {
		t.Errorf("the proposed workdir is not writable for Landlock: %v", pl.Writable)
	}
	for _, x := range pl.Mounts {
		if (x.Kind == Protected || x.Kind == Pinned) && strings.HasPrefix(x.Target, "/w/") {
			t.Errorf("a proposed workdir got a hold: %+v", x)
		}
	}
	for _, c := range pl.QuarantineCandidates() {
		if strings.HasPrefix(c, "/w/") {
			t.Errorf("after-session candidate in a proposed workdir: %s", c)
		}
	}
	direct := build("default")
	if direct.ProposedWorkdir() != nil {
		t.Errorf("default proposes")
	}
	held := false
	for _, x := range direct.Mounts {
		held = held || (x.Kind == Protected && x.Target == "/w/.git/hooks")
	}
	if !held {
		t.Errorf("the direct workdir lost its holds")
	}
}

// TestHostWritableIsTheBinds: the host paths the agent writes are its
// writable binds' sources — the workdir (also under propose), the inbox —
// never the sandbox's own /tmp and /dev/shm, which Writable lists for
// Landlock: a fedmem-cred installed under the host's /tmp (a clone in
// /tmp/ci) was refused as "under /tmp, which the agent writes".
func TestHostWritableIsTheBinds(t *testing.T) {
	tree := []string{"/w/", "/home/u/", "/v/", "/v/.git/"}
	for _, name := range []string{"default", "strict"} {
		p, _, err := profiles.Load(name)
		if err != nil {
			t.Fatal(err)
		}
		pl, err := Build(p.PlanRequest(), Input{Vault: "/v", Session: "s1", Workdir: "/w", Home: "/home/u", Exists: fakeHost(tree...), List: fakeList(tree...)})
		if err != nil {
			t.Fatal(err)
		}
		hw := pl.HostWritable()
		if !slices.Contains(hw, "/w") || !slices.Contains(hw, pl.Inbox) {
			t.Errorf("%s: HostWritable %v lacks the workdir or the inbox %s", name, hw, pl.Inbox)
		}
		for _, tmp := range []string{"/tmp", "/dev/shm"} {
			if slices.Contains(hw, tmp) {
				t.Errorf("%s: HostWritable %v holds the sandbox's own %s", name, hw, tmp)
			}
			if !slices.Contains(pl.Writable, tmp) {
				t.Errorf("%s: Writable %v lacks %s (the control)", name, pl.Writable, tmp)
			}
		}
	}
}
