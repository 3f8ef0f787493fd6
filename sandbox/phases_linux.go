package sandbox

import "golang.org/x/sys/unix"

// monoNow reads CLOCK_MONOTONIC in nanoseconds. The launcher and its init
// share it (no time namespace is made), so their timestamps compare.
func monoNow() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return 0
	}
	return ts.Nano()
}

// processStart is taken when the package is initialised, as close to the
// launcher's exec as Go code gets.
var processStart = monoNow()

// startPhases turns the parent's clone time and the init's timestamps
// (initMessage.Phases) into the per-phase durations, in milliseconds, of the
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
// A phase whose ends are unknown is -1.
func startPhases(clone int64, t map[string]int64) map[string]float64 {
	ms := func(a, b int64) float64 {
		if a == 0 || b == 0 || b < a {
			return -1
		}
		return float64(b-a) / 1e6
	}
	return map[string]float64{
		"launcher": ms(processStart, clone),
		"clone":    ms(clone, t["init"]),
		"root":     ms(t["init"], t["root"]),
		"verify":   ms(t["root"], t["verify"]),
		"layers":   ms(t["verify"], t["layers"]),
		"exec":     ms(t["layers"], t["exec"]),
		"total":    ms(processStart, t["exec"]),
	}
}
