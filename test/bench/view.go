package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/fedmem/fedmem/vault"
	"github.com/fedmem/fedmem/vault/view"
)

// viewHiddenEvery: one note in 100 of the view's vault is not in force.
const viewHiddenEvery = 100

// benchView (-only view) times start-up on the large vault (default 100k
// notes, 1% of them not in force) with `vault.view: in-force` (the
// gate's manifest and view tree at HEAD: the overlay's layer holds a whiteout per
// hidden note and the rewritten folder pages; read receipts mark the
// overlay's folders one by one) beside the same profile with `vault.view:
// all`. Target (issue 21): in-force / all ≤ 1.05. And `grep -r` over
// the vault under each (no target: the in-force view reads 1% fewer
// notes through an overlay).
func benchView(o options, res *Result, bin, work string, log io.Writer) error {
	large, err := ensureVaultWith(o.cache, o.large, viewHiddenEvery, bin, log)
	if err != nil {
		return err
	}
	head, err := vault.ReadHead(large)
	if err != nil {
		return err
	}
	if m, err := view.Read(large, head); err != nil || m.Tree != head {
		fmt.Fprintf(log, "bench: writing the view manifest and tree of %s (fedmem gate once)…\n", large)
		state := large + ".gate"
		cmd := exec.Command(filepath.Join(bin, "fedmem"), "gate", "once", "--vault", large, "--state", state)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("fedmem gate once: %w\n%s", err, out)
		}
		if m, err := view.Read(large, head); err != nil {
			return fmt.Errorf("no view manifest after fedmem gate once: %w", err)
		} else if m.Tree != head {
			return fmt.Errorf("the view manifest names no view tree at HEAD after fedmem gate once (the gate's log says why)")
		}
	}
	dir, err := os.MkdirTemp("", "fedmem-bench-view-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	profile := func(name, mode string) (string, error) {
		p := filepath.Join(dir, name+".yaml")
		return p, os.WriteFile(p, []byte("name: "+name+"\nextends: default\nnetwork: none\nvault:\n  view: "+mode+"\n"), 0o644)
	}
	inForce, err := profile("bench-view-in-force", view.InForce)
	if err != nil {
		return err
	}
	all, err := profile("bench-view-all", view.All)
	if err != nil {
		return err
	}
	runBin := filepath.Join(bin, "fedmem-run")
	for _, w := range []struct {
		name   string
		argv   []string
		target float64
		runs   int
	}{
		{"/bin/true", []string{"/bin/true"}, 1.05, o.runs},
		{"grep -r", []string{"grep", "-rc", "--exclude-dir=.git", "Bench note", large}, 0, o.receiptRuns},
	} {
		sIn := &Series{Name: fmt.Sprintf("%s, %s notes, vault.view: in-force", w.name, human(o.large)),
			Cmd: append([]string{runBin, "--profile", inForce, "--vault", large, "--workdir", work, "--"}, w.argv...)}
		sAll := &Series{Name: fmt.Sprintf("%s, %s notes, vault.view: all", w.name, human(o.large)),
			Cmd: append([]string{runBin, "--profile", all, "--vault", large, "--workdir", work, "--"}, w.argv...)}
		runs := o
		runs.runs = w.runs
		if w.target == 0 {
			runs.warmup = 1
		}
		fmt.Fprintf(log, "bench: %s over %s notes, vault.view in-force / all, %d warm-up + %d timed runs each…\n", w.name, human(o.large), runs.warmup, runs.runs)
		if err := alternate(runs, work, sIn, sAll); err != nil {
			return err
		}
		res.Series = append(res.Series, sIn, sAll)
		res.Ratios = append(res.Ratios, ratio(w.name+": vault.view in-force / all", sIn, sAll, w.target))
	}
	return nil
}
