package sandbox

import (
	"sync"

	"golang.org/x/sys/unix"
)

// MonoNow reads CLOCK_MONOTONIC in nanoseconds. The launcher and its init
// share it (no time namespace is made), so their timestamps compare.
func MonoNow() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return 0
	}
	return ts.Nano()
}

// ProcessStart is taken when the package is initialised, as close to the
// launcher's exec as Go code gets.
var ProcessStart = MonoNow()

// stamps are the named CLOCK_MONOTONIC stamps the launcher takes on its
// way to the clone (Stamp): one session per process, so package state.
var stamps struct {
	sync.Mutex
	t map[string]int64
}

// Stamp records that fedmem-run reached a named point before the clone of
// the sandbox's init, for the launcher's detail in the "started" event:
// "resolved" (profile, plan and identity decided; sandbox/launch),
// "prepared" (session record, output files, state directories, inbox,
// stdio: just before the backend runs), "idmapped" (the agent's identity
// realised: idmapped binds and their user namespace) and "limits" (the
// session cgroup).
func Stamp(name string) {
	now := MonoNow()
	stamps.Lock()
	defer stamps.Unlock()
	if stamps.t == nil {
		stamps.t = map[string]int64{}
	}
	stamps.t[name] = now
}

func stamp(name string) int64 {
	stamps.Lock()
	defer stamps.Unlock()
	return stamps.t[name]
}

// startPhases turns the parent's clone time and the init's timestamps
// (InitMessage.Phases) into the per-phase durations, in milliseconds, of the
// "started" event (issue 9: the next start-up regression shows where it is):
//
//	launcher  fedmem-run's start to the clone of the init
//	clone     the clone, the init's exec and its Go runtime start
//	root      building the sandbox's root (mounts)
//	verify    verifying the live mount table against the plan (and the PTY)
//	layers    network, no_new_privs, Landlock, capabilities, limits, seccomp
//	exec      the agent's fork and exec
//	total     fedmem-run's start to the agent's exec
//
// and the launcher's detail (Stamp), whose sum is launcher:
//
//	launcher.resolve  fedmem-run's start to a resolved session
//	launcher.prepare  session record, output files, state, inbox, stdio
//	launcher.idmap    the agent's identity: idmapped binds (root caller)
//	launcher.limits   the session cgroup
//	launcher.clone    the rest: pipes, signals, up to the clone
//
// and the init's detail ("go" is the init's own ProcessStart):
//
//	clone.runtime    the clone to the init's Go runtime and packages started
//	clone.main       the rest of its package init, to InitMain
//	root.config      within root: waiting for and reading the config
//	layers.network   loopback and proxy relay
//	layers.landlock  no_new_privs and Landlock
//	layers.caps      bounding set (forker), limits, capabilities
//	layers.signals   pid 1's signal handlers (os/signal)
//	layers.seccomp   the filter and its listener
//
// A phase whose ends are unknown is -1.
func startPhases(clone int64, t map[string]int64) map[string]float64 {
	ms := func(a, b int64) float64 {
		if a == 0 || b == 0 || b < a {
			return -1
		}
		return float64(b-a) / 1e6
	}
	resolved, prepared, idmapped, limits := stamp("resolved"), stamp("prepared"), stamp("idmapped"), stamp("limits")
	return map[string]float64{
		"launcher.resolve": ms(ProcessStart, resolved),
		"launcher.prepare": ms(resolved, prepared),
		"launcher.idmap":   ms(prepared, idmapped),
		"launcher.limits":  ms(idmapped, limits),
		"launcher.clone":   ms(limits, clone),
		"launcher":         ms(ProcessStart, clone),
		"clone":            ms(clone, t["init"]),
		"clone.runtime":    ms(clone, t["go"]),
		"clone.main":       ms(t["go"], t["init"]),
		"root.config":      ms(t["init"], t["config"]),
		"layers.network":   ms(t["verify"], t["network"]),
		"layers.landlock":  ms(t["network"], t["landlock"]),
		"layers.caps":      ms(t["landlock"], t["caps"]),
		"layers.signals":   ms(t["caps"], t["signals"]),
		"layers.seccomp":   ms(t["signals"], t["layers"]),
		"root":             ms(t["init"], t["root"]),
		"verify":           ms(t["root"], t["verify"]),
		"layers":           ms(t["verify"], t["layers"]),
		"exec":             ms(t["layers"], t["exec"]),
		"total":            ms(ProcessStart, t["exec"]),
	}
}

// The teardown's stamps (Stamp), from the agent's end to the "exit" event:
//
//	"agent-exit"  the init reported the agent's exit (or its sync pipe closed)
//	"reaped"      the init itself reaped: every process of the sandbox gone
//	"cleaned"     the backend's cleanup done (session cgroup removed,
//	              placeholders removed, idmapped trees closed)
//	"collected"   the launcher's end of session: vault HEAD, inbox listing,
//	              session record
var teardownStamps = []string{"agent-exit", "reaped", "cleaned", "collected"}

// EndPhases is the teardown's detail for the "exit" event, in
// milliseconds, up to now (the event itself):
//
//	teardown.wait     the agent's exit to the init reaped
//	teardown.cleanup  session cgroup, placeholders, idmapped trees
//	teardown.collect  vault HEAD, inbox listing, session record
//	teardown.event    the rest, up to the "exit" event
//	teardown          the agent's exit to the "exit" event
//
// and the CLOCK_MONOTONIC stamps (ns) a caller that started fedmem-run
// can subtract from its own clock: "start" (fedmem-run's first Go package
// initialisation: what precedes it is the exec and the Go runtime's start)
// and "exit_event" (what follows it is the report, the release of the
// output files and the process's exit). A phase whose ends are unknown is
// -1.
func EndPhases() (phases map[string]float64, clock map[string]int64) {
	now := MonoNow()
	ms := func(a, b int64) float64 {
		if a == 0 || b == 0 || b < a {
			return -1
		}
		return float64(b-a) / 1e6
	}
	t := map[string]int64{}
	for _, k := range teardownStamps {
		t[k] = stamp(k)
	}
	phases = map[string]float64{
		"teardown.wait":    ms(t["agent-exit"], t["reaped"]),
		"teardown.cleanup": ms(t["reaped"], t["cleaned"]),
		"teardown.collect": ms(t["cleaned"], t["collected"]),
		"teardown.event":   ms(t["collected"], now),
		"teardown":         ms(t["agent-exit"], now),
	}
	return phases, map[string]int64{"start": ProcessStart, "exit_event": now}
}
