package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// benchReceipts (-only receipts) times a read-heavy session on the large
// vault (default 100k notes): `grep -r` over the whole vault, and a `git
// log -p` of it, through fedmem-run with read receipts on (the default:
// every open of a vault file reported by fanotify and named), with them
// off (`vault.receipts: off`), and bare (the same command outside any
// sandbox). Whole sessions (start-up included). Target: receipts on /
// off ≤ 1.10; and `/bin/true`, what receipts add to start-up and
// teardown. Beside each on / off ratio of wall times, the same runs' CPU
// times (fedmem-run, its sandbox and the agent): what receipts cost the
// machine, which the other work on a shared machine moves less. Receipts
// need a root caller; as another user the "on" runs
// record nothing (vault_reads.recorded: false) and the figure says so.
func benchReceipts(o options, res *Result, runBin, large, work string, log io.Writer) error {
	dir, err := os.MkdirTemp("", "fedmem-bench-receipts-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	off := filepath.Join(dir, "bench-receipts-off.yaml")
	if err := os.WriteFile(off, []byte("name: bench-receipts-off\nextends: default\nnetwork: none\nvault:\n  receipts: off\n"), 0o644); err != nil {
		return err
	}
	on := filepath.Join(dir, "bench-receipts-on.yaml")
	if err := os.WriteFile(on, []byte("name: bench-receipts-on\nextends: default\nnetwork: none\n"), 0o644); err != nil {
		return err
	}
	runs := o
	runs.warmup, runs.runs = 1, o.receiptRuns
	note := ""
	if os.Geteuid() != 0 {
		note = "not root: receipts unavailable, the 'on' runs recorded nothing"
	}
	for _, w := range []struct {
		name string
		argv []string
	}{
		{"grep -r", []string{"grep", "-rc", "--exclude-dir=.git", "Bench note", large}},
		{"git log -p", []string{"git", "-c", "safe.directory=*", "-C", large, "log", "-p", "--no-color"}},
		{"/bin/true", []string{"/bin/true"}}, // start-up: the mark and its teardown
	} {
		bare := &Series{Name: fmt.Sprintf("%s, %s notes, bare", w.name, human(o.large)), Cmd: w.argv}
		sOff := &Series{Name: fmt.Sprintf("%s, %s notes, fedmem-run receipts off", w.name, human(o.large)),
			Cmd: append([]string{runBin, "--profile", off, "--vault", large, "--workdir", work, "--"}, w.argv...)}
		sOn := &Series{Name: fmt.Sprintf("%s, %s notes, fedmem-run receipts on", w.name, human(o.large)),
			Cmd: append([]string{runBin, "--profile", on, "--vault", large, "--workdir", work, "--"}, w.argv...)}
		fmt.Fprintf(log, "bench: %s over %s notes, receipts on / off / bare, 1 warm-up + %d timed runs each…\n", w.name, human(o.large), runs.runs)
		if err := alternate(runs, work, sOn, sOff, bare); err != nil {
			return err
		}
		res.Series = append(res.Series, sOn, sOff, bare)
		r := ratio(w.name+": receipts on / off", sOn, sOff, 1.10)
		r.Note = note
		res.Ratios = append(res.Ratios, r, cpuRatio(w.name+": receipts on / off, CPU", sOn, sOff),
			ratio(w.name+": receipts on / bare", sOn, bare, 0), ratio(w.name+": receipts off / bare", sOff, bare, 0))
	}
	return nil
}
