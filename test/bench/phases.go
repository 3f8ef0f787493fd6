package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// phaseOrder is the order of the "started" event's phases (sandbox
// startPhases).
var phaseOrder = []string{"launcher", "clone", "root", "verify", "layers", "exec", "total"}

// launcherDetail splits the launcher phase (sandbox Stamp); a backend that
// does not stamp a point leaves its parts out.
var launcherDetail = []string{"launcher.resolve", "launcher.prepare", "launcher.idmap", "launcher.limits", "launcher.clone"}

// initDetail splits the init's phases (sandbox startPhases).
var initDetail = []string{"clone.runtime", "root.config", "layers.network", "layers.landlock", "layers.caps", "layers.signals", "layers.seccomp"}

// teardownDetail splits the teardown (the "exit" event's phases_ms and
// what the bench itself sees after it).
var teardownDetail = []string{"teardown.wait", "teardown.cleanup", "teardown.collect", "teardown.event", "teardown.after"}

// benchPhases runs `fedmem-run --events F -- /bin/true` n times and keeps
// the median of each phase of the "started" and "exit" events, so a
// start-up or teardown regression shows where it is. It reads
// CLOCK_MONOTONIC (which fedmem-run's stamps use too) around each run,
// which gives what no stamp inside fedmem-run can: "prestart" (this
// fork and exec, the Go runtime's start, up to fedmem-run's first package
// initialisation), "teardown.after" (after the "exit" event: the report,
// the output files' release and the process's exit, until this wait
// returns) and "whole" (the run as a process, as the timed series see it).
func benchPhases(o options, res *Result, runBin, v, work string, log io.Writer) error {
	n := min(max(o.runs/4, 5), 50)
	ev := filepath.Join(work, "events.jsonl")
	defer os.Remove(ev)
	keep := listInbox(v)
	defer cleanInbox(v, keep)
	fmt.Fprintf(log, "bench: start-up and teardown phases, %d runs with --events…\n", n)
	all := map[string][]float64{}
	add := func(k string, v float64) {
		if v >= 0 {
			all[k] = append(all[k], v)
		}
	}
	for i := 0; i < n; i++ {
		os.Remove(ev)
		cmd := []string{runBin, "--vault", v, "--workdir", work, "--events", ev, "--", "/bin/true"}
		t0 := monoNow()
		out, err := runOnce(cmd, work)
		t1 := monoNow()
		if err != nil {
			return fmt.Errorf("%v: %w\n%s", cmd, err, out)
		}
		cleanInbox(v, keep)
		ms := func(a, b int64) float64 {
			if a == 0 || b == 0 || b < a {
				return -1
			}
			return float64(b-a) / 1e6
		}
		add("whole", ms(t0, t1))
		evs, err := readEvents(ev)
		if err != nil {
			return err
		}
		for _, e := range evs {
			for k, v := range e.Phases {
				add(k, v)
			}
			if e.Event == "exit" && e.Clock["exit_event"] != 0 {
				add("prestart", ms(t0, e.Clock["start"]))
				after := ms(e.Clock["exit_event"], t1)
				add("teardown.after", after)
				if td, ok := e.Phases["teardown"]; ok && td >= 0 && after >= 0 {
					add("teardown.whole", td+after)
				}
			}
		}
	}
	if len(all["total"]) == 0 {
		res.Skipped = append(res.Skipped, "start-up phases: this fedmem-run's started event has no phases_ms")
		return nil
	}
	res.Phases = map[string]float64{}
	for k, xs := range all {
		sort.Float64s(xs)
		res.Phases[k] = quantile(xs, 0.5)
	}
	res.PhaseRuns = n
	return nil
}

type event struct {
	Event  string             `json:"event"`
	Phases map[string]float64 `json:"phases_ms"`
	Clock  map[string]int64   `json:"clock_ns"`
}

// readEvents reads the "started" and "exit" events of an --events file.
func readEvents(name string) ([]event, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e event
		if json.Unmarshal(sc.Bytes(), &e) == nil && (e.Event == "started" || e.Event == "exit") {
			out = append(out, e)
		}
	}
	return out, sc.Err()
}

// monoNow reads CLOCK_MONOTONIC in nanoseconds, the clock of fedmem-run's
// clock_ns stamps.
func monoNow() int64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return 0
	}
	return ts.Nano()
}

func printPhases(w io.Writer, res *Result) {
	if len(res.Phases) == 0 {
		return
	}
	fmt.Fprintf(w, "\nfedmem-run start-up phases (--events \"started\", median of %d runs, ms):\n ", res.PhaseRuns)
	for _, k := range phaseOrder {
		if v, ok := res.Phases[k]; ok {
			fmt.Fprintf(w, " %s %.2f", k, v)
		}
	}
	detail := false
	for _, k := range launcherDetail {
		if v, ok := res.Phases[k]; ok {
			if !detail {
				fmt.Fprint(w, "\n  launcher =")
				detail = true
			}
			fmt.Fprintf(w, " %s %.2f", strings.TrimPrefix(k, "launcher."), v)
		}
	}
	idetail := false
	for _, k := range initDetail {
		if v, ok := res.Phases[k]; ok {
			if !idetail {
				fmt.Fprint(w, "\n  init detail:")
				idetail = true
			}
			fmt.Fprintf(w, " %s %.2f", k, v)
		}
	}
	if v, ok := res.Phases["teardown.whole"]; ok {
		fmt.Fprintf(w, "\n  prestart %.2f teardown %.2f whole %.2f", res.Phases["prestart"], v, res.Phases["whole"])
		fmt.Fprint(w, "\n  teardown =")
		for _, k := range teardownDetail {
			if v, ok := res.Phases[k]; ok {
				fmt.Fprintf(w, " %s %.2f", strings.TrimPrefix(k, "teardown."), v)
			}
		}
	}
	fmt.Fprint(w, "\n (launcher: fedmem-run's start to the clone; clone: clone, exec and Go start of the init; root: mounts;\n  verify: live mount table against the plan; layers: network, no_new_privs, Landlock, caps, limits, seccomp; exec: the agent's fork+exec")
	if detail {
		fmt.Fprint(w, ";\n  launcher = resolve: profile, plan, identity; prepare: session record, outputs, state dirs, inbox, stdio;\n  idmap: idmapped binds and their user namespace; limits: session cgroup; clone: pipes, signals, the clone itself")
	}
	if _, ok := res.Phases["teardown.whole"]; ok {
		fmt.Fprint(w, ";\n  prestart: fork, exec and Go runtime start of fedmem-run, up to its first stamp; teardown: the agent's exit to\n  fedmem-run's exit as this bench's wait sees it; whole: the run as a process (medians: parts need not add up);\n  teardown = wait: the init reaped; cleanup: session cgroup, placeholders, idmapped trees; collect: vault HEAD,\n  inbox listing, session record; event: up to the exit event; after: report, output files, process exit")
	}
	fmt.Fprintln(w, ")")
}
