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
)

// phaseOrder is the order of the "started" event's phases (sandbox
// startPhases).
var phaseOrder = []string{"launcher", "clone", "root", "verify", "layers", "exec", "total"}

// launcherDetail splits the launcher phase (sandbox Stamp); a backend that
// does not stamp a point leaves its parts out.
var launcherDetail = []string{"launcher.resolve", "launcher.prepare", "launcher.idmap", "launcher.limits", "launcher.clone"}

// initDetail splits the init's phases (sandbox startPhases).
var initDetail = []string{"clone.runtime", "root.config", "layers.network", "layers.landlock", "layers.caps", "layers.signals", "layers.seccomp"}

// benchPhases runs `fedmem-run --events F -- /bin/true` n times and keeps
// the median of each phase of the "started" event, so a start-up
// regression shows where it is.
func benchPhases(o options, res *Result, runBin, v, work string, log io.Writer) error {
	n := min(max(o.runs/4, 5), 50)
	ev := filepath.Join(work, "events.jsonl")
	defer os.Remove(ev)
	keep := listInbox(v)
	defer cleanInbox(v, keep)
	fmt.Fprintf(log, "bench: start-up phases, %d runs with --events…\n", n)
	for i := 0; i < n; i++ {
		cmd := []string{runBin, "--vault", v, "--workdir", work, "--events", ev, "--", "/bin/true"}
		if out, err := runOnce(cmd, work); err != nil {
			return fmt.Errorf("%v: %w\n%s", cmd, err, out)
		}
		cleanInbox(v, keep)
	}
	f, err := os.Open(ev)
	if err != nil {
		return err
	}
	defer f.Close()
	all := map[string][]float64{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e struct {
			Event  string             `json:"event"`
			Phases map[string]float64 `json:"phases_ms"`
		}
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Event != "started" {
			continue
		}
		for k, v := range e.Phases {
			if v >= 0 {
				all[k] = append(all[k], v)
			}
		}
	}
	if len(all) == 0 {
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
	fmt.Fprint(w, "\n (launcher: fedmem-run's start to the clone; clone: clone, exec and Go start of the init; root: mounts;\n  verify: live mount table against the plan; layers: network, no_new_privs, Landlock, caps, limits, seccomp; exec: the agent's fork+exec")
	if detail {
		fmt.Fprint(w, ";\n  launcher = resolve: profile, plan, identity; prepare: session record, outputs, state dirs, inbox, stdio;\n  idmap: idmapped binds and their user namespace; limits: session cgroup; clone: pipes, signals, the clone itself")
	}
	fmt.Fprintln(w, ")")
}
