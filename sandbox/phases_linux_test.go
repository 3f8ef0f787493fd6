package sandbox

import (
	"math"
	"testing"
)

// The "started" event's phases are differences of the launcher's and the
// init's CLOCK_MONOTONIC stamps; a missing or out-of-order stamp is -1,
// never a negative or invented duration.
func TestStartPhases(t *testing.T) {
	clone := ProcessStart + 5e6
	got := startPhases(clone, map[string]int64{"init": clone + 2e6, "root": clone + 3e6, "verify": clone + 3.5e6, "layers": clone + 6e6, "exec": clone + 7e6})
	want := map[string]float64{"launcher": 5, "clone": 2, "root": 1, "verify": 0.5, "layers": 2.5, "exec": 1, "total": 12}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %v ms, want %v", k, got[k], w)
		}
	}
	Stamp("resolved")
	stamps.t["resolved"] = ProcessStart + 1e6
	stamps.t["prepared"] = ProcessStart + 2e6
	stamps.t["idmapped"] = ProcessStart + 3.5e6
	stamps.t["limits"] = ProcessStart + 4e6
	got = startPhases(clone, nil)
	detail := map[string]float64{"launcher.resolve": 1, "launcher.prepare": 1, "launcher.idmap": 1.5, "launcher.limits": 0.5, "launcher.clone": 1, "launcher": 5}
	for k, w := range detail {
		if got[k] != w {
			t.Errorf("%s = %v ms, want %v", k, got[k], w)
		}
	}
	// The init's detail splits clone, root and layers.
	got = startPhases(clone, map[string]int64{"go": clone + 1.5e6, "init": clone + 2e6, "config": clone + 2.25e6, "root": clone + 3e6, "verify": clone + 3.5e6,
		"network": clone + 3.75e6, "landlock": clone + 4.5e6, "caps": clone + 5e6, "signals": clone + 5.5e6, "layers": clone + 6e6, "exec": clone + 7e6})
	initDetail := map[string]float64{"clone.runtime": 1.5, "clone.main": 0.5, "root.config": 0.25, "layers.network": 0.25, "layers.landlock": 0.75, "layers.caps": 0.5, "layers.signals": 0.5, "layers.seccomp": 0.5, "layers": 2.5}
	for k, w := range initDetail {
		if got[k] != w {
			t.Errorf("%s = %v ms, want %v", k, got[k], w)
		}
	}
	partial := startPhases(clone, map[string]int64{"init": clone + 1e6, "root": clone})
	if partial["root"] != -1 || partial["verify"] != -1 || partial["exec"] != -1 || partial["total"] != -1 {
		t.Errorf("out-of-order or missing stamps must be -1: %v", partial)
	}
	if ProcessStart == 0 || MonoNow() < ProcessStart {
		t.Errorf("CLOCK_MONOTONIC unreadable or going back: start %d now %d", ProcessStart, MonoNow())
	}
}

// The "exit" event's teardown phases are differences of the launcher's
// stamps after the agent's exit; a missing stamp is -1, and the clock_ns
// stamps let a caller measure what precedes and follows them.
func TestEndPhases(t *testing.T) {
	now := MonoNow()
	stamps.Lock()
	if stamps.t == nil {
		stamps.t = map[string]int64{}
	}
	stamps.t["agent-exit"] = now - 10e6
	stamps.t["reaped"] = now - 9e6
	stamps.t["cleaned"] = now - 6e6
	stamps.t["collected"] = now - 5e6
	stamps.Unlock()
	got, clock := EndPhases()
	want := map[string]float64{"teardown.wait": 1, "teardown.cleanup": 3, "teardown.collect": 1}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %v ms, want %v", k, got[k], w)
		}
	}
	if got["teardown.event"] < 5 || got["teardown"] < 10 || math.Abs(got["teardown"]-(got["teardown.event"]+5)) > 1e-6 {
		t.Errorf("teardown %v ms, event %v ms: want the event at or after the stamps, teardown their sum", got["teardown"], got["teardown.event"])
	}
	if clock["start"] != ProcessStart || clock["exit_event"] < now {
		t.Errorf("clock_ns %v: want start %d and an exit_event at or after %d", clock, ProcessStart, now)
	}
	stamps.Lock()
	delete(stamps.t, "cleaned")
	stamps.Unlock()
	got, _ = EndPhases()
	if got["teardown.cleanup"] != -1 || got["teardown.collect"] != -1 || got["teardown.wait"] != 1 {
		t.Errorf("a missing stamp must make its phases -1: %v", got)
	}
}
