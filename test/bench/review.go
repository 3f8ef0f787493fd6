package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/fedmem/fedmem/gate"
	"github.com/fedmem/fedmem/gate/review"
	"github.com/fedmem/fedmem/vault"
)

// benchReview is the curator's side (issue 19): on the large vault, a
// batch of held drafts of one session approved with one `fedmem review
// approve --session S --yes` against single `fedmem review approve ID`
// commands (each its own process, as a human or a script runs them), and
// the latency of `fedmem review show ID`. The gate serves its review socket
// in this process; the drafts are written straight into the inbox (no
// session record: every one is held as origin-unverified).
func benchReview(o options, res *Result, bin string, log io.Writer) error {
	src, err := ensureVault(o.cache, o.reviewSize, bin, log)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp(o.cache, "review-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	v := filepath.Join(work, "vault")
	fmt.Fprintf(log, "bench: cloning the %s-note vault for the review bench…\n", human(o.reviewSize))
	if out, err := exec.Command("git", "clone", "-q", "--local", src, v).CombinedOutput(); err != nil {
		return fmt.Errorf("git clone %s: %w\n%s", src, err, out)
	}
	// This uid reviews: a human commit of the policy, as an admin would.
	pol := fmt.Sprintf("version: 1\nreviewers: [\"%d\"]\n", os.Geteuid())
	if err := os.WriteFile(filepath.Join(v, filepath.FromSlash(vault.PolicyFile)), []byte(pol), 0o644); err != nil {
		return err
	}
	if out, err := exec.Command("git", "-C", v, "-c", "user.name=bench", "-c", "user.email=bench@fedmem.invalid", "commit", "-qam", "bench: reviewer").CombinedOutput(); err != nil {
		return fmt.Errorf("commit policy: %w\n%s", err, out)
	}
	singles := max(o.promoteRuns, 5)
	drafts := func(sess string, n int) error {
		d := filepath.Join(v, vault.InboxDir, sess)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		for i := 0; i < n; i++ {
			body := fmt.Sprintf("---\ntype: Fact\ntitle: Review bench %s %d\n---\nReview bench note %d of session %s.\n", sess, i, i, sess)
			if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("n%04d.md", i)), []byte(body), 0o644); err != nil {
				return err
			}
		}
		return nil
	}
	if err := drafts("bench-batch", o.reviewBatch); err != nil {
		return err
	}
	if err := drafts("bench-single", singles); err != nil {
		return err
	}
	g, err := gate.Open(gate.Options{Vault: v, AllowSameUser: true, StateDir: filepath.Join(work, "gate-state")})
	if err != nil {
		return fmt.Errorf("gate: %w", err)
	}
	defer g.Close()
	fmt.Fprintf(log, "bench: holding %d + %d drafts for review…\n", o.reviewBatch, singles)
	s, err := g.Once()
	if err != nil {
		return err
	}
	if s.Pending != o.reviewBatch+singles {
		return fmt.Errorf("review bench: %d drafts held, want %d: %+v", s.Pending, o.reviewBatch+singles, s.Errors)
	}
	var single, batch []string
	for _, d := range s.Decisions {
		if d.Session == "bench-single" {
			single = append(single, d.ID)
		} else {
			batch = append(batch, d.ID)
		}
	}
	sock := filepath.Join(work, "review.sock")
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- g.ServeReview(ctx, sock) }()
	defer func() { cancel(); <-served }()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(end) {
			return fmt.Errorf("review socket %s never appeared", sock)
		}
	}
	fedmem := filepath.Join(bin, "fedmem")
	timed := func(args ...string) (float64, []byte, error) {
		t0 := time.Now()
		out, err := exec.Command(fedmem, append([]string{"review", "--socket", sock}, args...)...).CombinedOutput()
		ms := float64(time.Since(t0).Nanoseconds()) / 1e6
		if err != nil {
			return 0, out, fmt.Errorf("fedmem review %v: %w\n%s", args, err, out)
		}
		return ms, out, nil
	}
	n := human(o.reviewSize)
	show := &Series{Name: "review show, " + n + " notes", Cmd: []string{"fedmem", "review", "show", "ID"}}
	one := &Series{Name: "review approve ID, " + n + " notes", Cmd: []string{"fedmem", "review", "approve", "ID"}}
	all := &Series{Name: fmt.Sprintf("review approve --session (%d drafts), %s notes", len(batch), n), Cmd: []string{"fedmem", "review", "approve", "--session", "S", "--yes"}}
	fmt.Fprintf(log, "bench: review show ×%d, approve ×%d, one batch of %d…\n", len(single), len(single), len(batch))
	for i, id := range single {
		ms, _, err := timed("show", batch[i%len(batch)])
		if err != nil {
			return err
		}
		show.times = append(show.times, ms)
		if ms, _, err = timed("approve", id); err != nil {
			return err
		}
		one.times = append(one.times, ms)
	}
	ms, out, err := timed("approve", "--session", "bench-batch", "--yes", "--json")
	if err != nil {
		return err
	}
	var resp review.Response
	if err := json.Unmarshal(out, &resp); err != nil || len(resp.Batch) != len(batch) || review.BatchFailed(resp.Batch) != 0 {
		return fmt.Errorf("review batch: %d items, %d failed, %v", len(resp.Batch), review.BatchFailed(resp.Batch), err)
	}
	all.times = []float64{ms}
	for _, s := range []*Series{show, one, all} {
		s.Runs = len(s.times)
		s.summarise()
	}
	res.Series = append(res.Series, show, one, all)
	per := all.Median / float64(len(batch))
	r := Ratio{Name: fmt.Sprintf("review: batch of %d / %d single approvals", len(batch), len(batch)), Num: all.Name, Den: one.Name + " ×" + strconv.Itoa(len(batch)), Target: 0.2}
	if one.Median > 0 {
		r.Value = per / one.Median
		r.Met = r.Value <= r.Target
	}
	r.Note = fmt.Sprintf("%.1f ms per draft in the batch, %.1f ms per single approval", per, one.Median)
	res.Ratios = append(res.Ratios, r)
	return nil
}
