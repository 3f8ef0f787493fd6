package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fedmem/fedmem/gate"
	"github.com/fedmem/fedmem/gate/validate"
	"github.com/fedmem/fedmem/vault"
)

// Latency is write→decision latency of drafts written by real fedmem-run
// sessions while `fedmem gate run` (gate.Run: inotify, then passes) works.
type Latency struct {
	Name     string  `json:"name"`
	Sessions int     `json:"sessions"`
	Drafts   int     `json:"drafts"`
	Seconds  float64 `json:"seconds"`
	P50      float64 `json:"p50_ms"`
	P90      float64 `json:"p90_ms"`
	P99      float64 `json:"p99_ms"`
	Max      float64 `json:"max_ms"`
	Target   float64 `json:"target_p99_ms"`
	Met      bool    `json:"met"`
	// How the gate got there: its passes (those that decided drafts),
	// drafts per pass, time in each phase summed over them, and how the
	// drafts were decided; WriteSpan is first write to last write.
	Passes       int     `json:"passes"`
	PerPassMean  float64 `json:"drafts_per_pass_mean"`
	PerPassMax   int     `json:"drafts_per_pass_max"`
	PassMsMax    float64 `json:"pass_ms_max"`
	ClaimMs      float64 `json:"claim_ms"`
	DecideMs     float64 `json:"decide_ms"`
	PublishMs    float64 `json:"publish_ms"`
	BusyMs       float64 `json:"busy_ms"`
	CPUMs        float64 `json:"cpu_ms"`
	Groups       int     `json:"groups"`
	Promoted     int     `json:"promoted"`
	Pending      int     `json:"pending"`
	WriteSpanSec float64 `json:"write_span_s"`
}

// benchLatency is part (e): a burst of 1000 drafts from 20 concurrent
// fedmem-run sessions, and one session writing 10 drafts a second, each
// against a gate running as `fedmem gate run` does. A draft's write time is
// its change time in the session folder (the rename that published it,
// recorded by the gate when it claimed it); its decision time is the
// modification time of its receipt, which the gate writes once the decision
// is durable — what the agent sees.
func benchLatency(o options, res *Result, runBin, src string, log io.Writer) error {
	burst, err := latencyRun(o, runBin, src, "burst", 20, 50, 0, 1000, log)
	if err != nil {
		return err
	}
	steady, err := latencyRun(o, runBin, src, "steady", 1, 100, 100*time.Millisecond, 100, log)
	if err != nil {
		return err
	}
	res.Latency = append(res.Latency, burst, steady)
	return nil
}

func latencyRun(o options, runBin, src, kind string, sessions, per int, gap time.Duration, target float64, log io.Writer) (Latency, error) {
	lt := Latency{Sessions: sessions, Target: target}
	work, err := os.MkdirTemp(o.cache, "latency-")
	if err != nil {
		return lt, err
	}
	defer os.RemoveAll(work)
	os.Chmod(work, 0o755)
	v := filepath.Join(work, "vault")
	if out, err := exec.Command("git", "clone", "-q", "--local", src, v).CombinedOutput(); err != nil {
		return lt, fmt.Errorf("git clone %s: %w\n%s", src, err, out)
	}
	if err := os.MkdirAll(filepath.Join(v, vault.InboxDir), 0o755); err != nil {
		return lt, err
	}
	if err := trustDefaultProfile(runBin, v, filepath.Join(work, "wd")); err != nil {
		return lt, err
	}
	g, err := gate.Open(gate.Options{Vault: v, AllowSameUser: true, StateDir: filepath.Join(work, "gate-state"), Spares: o.spares})
	if err != nil {
		return lt, fmt.Errorf("gate: %w", err)
	}
	defer g.Close()
	total := sessions * per
	var mu sync.Mutex
	var decs []gate.Decision
	var gateErrs []string
	all := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	// FEDMEM_BENCH_TRACE=1 prints every pass that decided drafts or took
	// more than 20 ms.
	trace := os.Getenv("FEDMEM_BENCH_TRACE") != ""
	start := time.Now()
	// The burst meets a running gate: the sessions start once Run has
	// reported its first pass (its state open) and is warm (waitWarm).
	ready := make(chan struct{})
	var readyOnce sync.Once
	go func() {
		ran <- g.Run(ctx, 2*time.Second, func(s *gate.Summary, err error) {
			readyOnce.Do(func() { close(ready) })
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				gateErrs = append(gateErrs, err.Error())
			}
			if s != nil {
				decs = append(decs, s.Decisions...)
				gateErrs = append(gateErrs, s.Errors...)
				if t := s.Timing; t != nil && trace && (len(s.Decisions) > 0 || t.TotalMs > 20) {
					fmt.Fprintf(log, "bench: pass at +%6.0f ms: %4d claims, %4d decided, %2d groups; claim %5.0f ms, decide %5.0f ms (flushes %5.0f), publish %5.0f ms, total %5.0f ms, cpu %5.0f ms\n",
						float64(t.Start.Sub(start).Microseconds())/1000, t.Claims, len(s.Decisions), t.Groups, t.ClaimMs, t.DecideMs, t.FlushMs, t.PublishMs, t.TotalMs, t.CPUMs)
				}
				if t := s.Timing; t != nil && len(s.Decisions) > 0 {
					lt.Passes++
					lt.PerPassMax = max(lt.PerPassMax, len(s.Decisions))
					lt.PassMsMax = max(lt.PassMsMax, t.TotalMs)
					lt.ClaimMs += t.ClaimMs
					lt.DecideMs += t.DecideMs
					lt.PublishMs += t.PublishMs
					lt.BusyMs += t.TotalMs
					lt.CPUMs += t.CPUMs
					lt.Groups += t.Groups
				}
			}
			if len(decs) >= total {
				select {
				case <-all:
				default:
					close(all)
				}
			}
		})
	}()
	select {
	case <-ready:
	case err := <-ran:
		return lt, fmt.Errorf("gate run ended before its first pass: %v", err)
	}
	if err := waitWarm(g, o, log); err != nil {
		return lt, err
	}
	fmt.Fprintf(log, "bench: latency, %s: %d fedmem-run sessions × %d drafts against `gate run`…\n", kind, sessions, per)
	t0 := time.Now()
	if trace {
		fmt.Fprintf(log, "bench: sessions start at +%.0f ms\n", float64(t0.Sub(start).Microseconds())/1000)
	}
	if err := runSessions(runBin, v, filepath.Join(work, "wd"), sessions, per, gap, ""); err != nil {
		return lt, err
	}
	select {
	case <-all:
	case <-time.After(5 * time.Minute):
		mu.Lock()
		defer mu.Unlock()
		return lt, fmt.Errorf("latency %s: %d of %d drafts decided after 5 minutes; gate errors: %v", kind, len(decs), total, gateErrs)
	}
	lt.Seconds = time.Since(t0).Seconds()
	if trace {
		fmt.Fprintf(log, "bench: %d of %d spare files left\n", g.SpareFiles(), o.spares)
	}
	cancel()
	<-ran
	mu.Lock()
	defer mu.Unlock()
	if len(gateErrs) > 0 {
		return lt, fmt.Errorf("latency %s: gate errors: %s", kind, strings.Join(gateErrs, "; "))
	}
	var lat []float64
	var firstW, lastW time.Time
	for _, d := range decs {
		written := d.FirstSeen
		if d.Owner != nil && !d.Owner.Ctime.IsZero() {
			written = d.Owner.Ctime
		}
		if firstW.IsZero() || written.Before(firstW) {
			firstW = written
		}
		if written.After(lastW) {
			lastW = written
		}
		switch d.State {
		case gate.StatePromoted:
			lt.Promoted++
		case gate.StatePending:
			lt.Pending++
		}
		decided := d.Decided
		if fi, err := os.Stat(filepath.Join(vault.InboxPath(v, d.Session), ".receipts", d.Draft+".json")); err == nil {
			decided = fi.ModTime()
		}
		lat = append(lat, float64(decided.Sub(written).Nanoseconds())/1e6)
	}
	sort.Float64s(lat)
	lt.Drafts = len(lat)
	lt.WriteSpanSec = lastW.Sub(firstW).Seconds()
	if lt.Passes > 0 {
		lt.PerPassMean = float64(len(lat)) / float64(lt.Passes)
	}
	lt.Name = fmt.Sprintf("%s: %d sessions × %d drafts", kind, sessions, per)
	if gap > 0 {
		lt.Name = fmt.Sprintf("%s: 1 session, ~%.0f drafts/s × %d", kind, float64(time.Second)/float64(gap), per)
	}
	if len(lat) > 0 {
		lt.P50, lt.P90, lt.P99, lt.Max = quantile(lat, 0.5), quantile(lat, 0.9), quantile(lat, 0.99), lat[len(lat)-1]
		lt.Met = lt.P99 <= target
	}
	return lt, nil
}

// waitWarm waits for what a `fedmem gate run` service that has been up a
// while has before drafts arrive: its secret scanner compiled (gate run
// starts that beside its first pass) and its spare files made.
func waitWarm(g *gate.Gate, o options, log io.Writer) error {
	if _, err := validate.Secrets(nil); err != nil {
		return fmt.Errorf("secret scanner: %w", err)
	}
	// The spares (`gate run --spares`) are made while the gate is idle, at
	// the lowest CPU priority: on a machine busy with other work the burst
	// starts after a minute with what there is.
	for t := time.Now(); g.SpareFiles() < o.spares && time.Since(t) < time.Minute; time.Sleep(50 * time.Millisecond) {
	}
	if n := g.SpareFiles(); n < o.spares {
		fmt.Fprintf(log, "bench: the gate made %d of %d spare files in a minute (machine busy); the burst starts with them\n", n, o.spares)
	}
	return nil
}

func sleepCmd(gap time.Duration) string {
	if gap <= 0 {
		return ":"
	}
	return fmt.Sprintf("sleep %.3f", gap.Seconds())
}

func printLatency(w io.Writer, res *Result) {
	if len(res.Latency) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%-40s %7s %9s %9s %9s %9s %9s\n", "write→decision (gate run)", "drafts", "seconds", "p50 ms", "p90 ms", "p99 ms", "max ms")
	for _, l := range res.Latency {
		fmt.Fprintf(w, "%-40s %7d %9.2f %9.1f %9.1f %9.1f %9.1f\n", l.Name, l.Drafts, l.Seconds, l.P50, l.P90, l.P99, l.Max)
	}
	fmt.Fprintln(w, "(write: the draft's change time in the session folder; decision: its receipt's modification time;\n the sessions start once `gate run` has reported its first pass, compiled its secret scanner and made its spare files, -spares)")
	fmt.Fprintf(w, "%-8s %8s %5s %6s %8s %6s %6s %8s %9s %10s %8s %8s %7s\n", "gate run", "promoted", "held", "passes", "drafts/p", "max/p", "groups", "claim ms", "decide ms", "publish ms", "busy ms", "cpu ms", "write s")
	for _, l := range res.Latency {
		kind, _, _ := strings.Cut(l.Name, ":")
		fmt.Fprintf(w, "%-8s %8d %5d %6d %8.1f %6d %6d %8.0f %9.0f %10.0f %8.0f %8.0f %7.2f\n", kind, l.Promoted, l.Pending, l.Passes, l.PerPassMean, l.PerPassMax, l.Groups, l.ClaimMs, l.DecideMs, l.PublishMs, l.BusyMs, l.CPUMs, l.WriteSpanSec)
	}
	fmt.Fprintln(w, "(passes that decided drafts; ms summed over them; cpu: the gate process's; write s: first to last draft written)")
}

// Target is one figure of issue 9 beside its anchor.
type Target struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Anchor string  `json:"anchor"`
	Met    bool    `json:"met"`
	Note   string  `json:"note,omitempty"`
}

// targets collects every figure of issue 9 from this run; one that was not
// measured (skipped part, -only) is listed as such.
func targets(res *Result) []Target {
	var out []Target
	findRatio := func(prefix string) *Ratio {
		for i := range res.Ratios {
			if strings.HasPrefix(res.Ratios[i].Name, prefix) {
				return &res.Ratios[i]
			}
		}
		return nil
	}
	ratioT := func(name, prefix, anchor string) {
		t := Target{Name: name, Unit: "×", Anchor: anchor}
		if r := findRatio(prefix); r != nil && r.Value > 0 {
			t.Value, t.Met = r.Value, r.Met
		} else {
			t.Note = "not measured in this run"
		}
		out = append(out, t)
	}
	ratioT("startup: fedmem-run / hardened bwrap", "fedmem-run / bwrap", "≤ 1.00× hardened bwrap")
	ratioT("startup: 100k-note / 1k-note vault", "100k / 1k notes", "≤ 1.05× the 1k vault")
	ratioT("promotion: 100k-note / 1k-note vault", "gate 100k / 1k notes", "≤ 1.05× the 1k vault")
	ratioT("promotion at 100k: gate / git add+commit", "gate / git CLI, 100k notes", "≤ 0.15× git add && git commit")
	rate := func(name, kind, anchor string, min float64, promotions bool) {
		t := Target{Name: name, Unit: "/s", Anchor: anchor, Note: "not measured in this run"}
		for _, tp := range res.Throughput {
			if tp.Kind != kind {
				continue
			}
			t.Note = ""
			t.Value = tp.PerSecond
			if promotions {
				t.Value = 0
				if tp.Seconds > 0 {
					t.Value = float64(tp.Promoted) / tp.Seconds
				}
				if tp.Promoted != tp.Drafts {
					t.Note = fmt.Sprintf("%d of %d drafts promoted", tp.Promoted, tp.Drafts)
				}
			} else if tp.Pending != tp.Drafts {
				t.Note = fmt.Sprintf("%d of %d drafts held", tp.Pending, tp.Drafts)
			}
			t.Met = t.Value >= min
		}
		out = append(out, t)
	}
	rate("gate: drafts decided per second (held)", "held", "≥ 500 drafts/s", 500, false)
	rate("gate: promotions per second", "promote", "≥ 200 promotions/s", 200, true)
	lat := func(name, prefix, anchor string) {
		t := Target{Name: name, Unit: "ms", Anchor: anchor, Note: "not measured in this run"}
		for _, l := range res.Latency {
			if strings.HasPrefix(l.Name, prefix) {
				t.Value, t.Met, t.Note = l.P99, l.Met, ""
			}
		}
		out = append(out, t)
	}
	ratioT("review: one batch / as many single approvals", "review: batch of", "≤ 0.20× single approvals")
	showT := Target{Name: "review show p50 on the review vault", Unit: "ms", Anchor: "≤ 50 ms", Note: "not measured in this run"}
	for _, s := range res.Series {
		if strings.HasPrefix(s.Name, "review show,") {
			showT.Value, showT.Met, showT.Note = s.Median, s.Median <= 50, ""
		}
	}
	out = append(out, showT)
	lat("write→decision p99, burst of 1000 from 20 sessions", "burst", "≤ 1000 ms")
	lat("write→decision p99, steady 10 drafts/s", "steady", "≤ 100 ms")
	return out
}

func printTargets(w io.Writer, res *Result) {
	fmt.Fprintf(w, "\n%-52s %12s  %-32s %s\n", "issue 9 targets (this run)", "value", "anchor", "")
	for _, t := range res.Targets {
		verdict := "met"
		if !t.Met {
			verdict = "NOT MET"
		}
		val := fmt.Sprintf("%.3f%s", t.Value, t.Unit)
		if t.Unit != "×" {
			val = fmt.Sprintf("%.1f %s", t.Value, t.Unit)
		}
		if t.Note == "not measured in this run" {
			val, verdict = "—", "not measured"
		} else if t.Note != "" {
			verdict += " (" + t.Note + ")"
		}
		fmt.Fprintf(w, "%-52s %12s  %-32s %s\n", t.Name, val, t.Anchor, verdict)
	}
}

// benchSource is a note every bench vault holds; drafts cite it.
const benchSource = "10-projects/d0000/note-000000.md"

// trustDefaultProfile commits a policy that auto-promotes facts from
// sessions of fedmem-run's default profile, pinned to the hash this
// fedmem-run records (learnt from one probe session), so the figures do not
// depend on the gate and the launcher being built from the same tree.
func trustDefaultProfile(runBin, v, wd string) error {
	if err := os.MkdirAll(wd, 0o777); err != nil {
		return err
	}
	// The agent runs as another uid (a root caller's sessions never run
	// as root): it must reach its working directory.
	os.Chmod(filepath.Dir(wd), 0o755)
	os.Chmod(wd, 0o777)
	if out, err := exec.Command(runBin, "--vault", v, "--workdir", wd, "--", "/bin/true").CombinedOutput(); err != nil {
		return fmt.Errorf("fedmem-run probe session: %w\n%s", err, out)
	}
	recs, _ := filepath.Glob(filepath.Join(v, vault.InboxDir, ".sessions", "*.json"))
	hash := ""
	for _, r := range recs {
		var rec gate.SessionRecord
		if b, err := os.ReadFile(r); err == nil && json.Unmarshal(b, &rec) == nil && rec.Profile == "default" && rec.ProfileHash != "" {
			hash = rec.ProfileHash
			os.RemoveAll(vault.InboxPath(v, rec.Session))
		}
	}
	if hash == "" {
		return fmt.Errorf("the probe session left no session record naming the default profile in %s", filepath.Join(v, vault.InboxDir, ".sessions"))
	}
	pol := "version: 1\nreviewers: [root]\nauto_promote:\n  profiles: [\"default@" + hash + "\"]\n  types: [Fact]\n  max_per_session: 100000\n  max_per_day: 1000000\n"
	p := filepath.Join(v, "00-global", "policy.yaml")
	if err := os.WriteFile(p, []byte(pol), 0o644); err != nil {
		return err
	}
	for _, args := range [][]string{{"add", "00-global/policy.yaml"}, {"-c", "user.name=fedmem bench", "-c", "user.email=bench@fedmem.invalid", "commit", "-q", "--no-verify", "-m", "bench: trust the default profile"}} {
		if out, err := exec.Command("git", append([]string{"-C", v}, args...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %w\n%s", args, err, out)
		}
	}
	return nil
}

// runSessions runs `sessions` concurrent fedmem-run sessions on v, each
// writing `per` drafts (gap apart) under a temporary name the gate ignores
// and renaming each into place (never read half written). confidence ""
// alternates facts (even) and hypotheses (odd); otherwise every draft
// claims it.
func runSessions(runBin, v, wd string, sessions, per int, gap time.Duration, confidence string) error {
	if err := os.MkdirAll(wd, 0o777); err != nil {
		return err
	}
	// The agent runs as another uid (a root caller's sessions never run
	// as root): it must reach its working directory.
	os.Chmod(filepath.Dir(wd), 0o755)
	os.Chmod(wd, 0o777)
	conf := `if [ $((i % 2)) -eq 0 ]; then c=verified; else c=hypothesis; fi`
	if confidence != "" {
		conf = "c=" + confidence
	}
	// The title numbers the session and the draft (not the session id:
	// an id mixes letters and digits, which the gate's Fact shape holds as
	// an encoded run, shape-token).
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for i := 0; i < sessions; i++ {
		script := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do
  %s
  printf -- '---\ntype: Fact\ntitle: Bench note %d %%d\nconfidence: %%s\nrisk: low\nsources:\n  - resource: %s\n---\n\nDraft %%d of a bench session.\n' $i $c $i > "$FEDMEM_INBOX/d$i.md.tmp"
  mv "$FEDMEM_INBOX/d$i.md.tmp" "$FEDMEM_INBOX/d$i.md"
  %s
  i=$((i+1))
done`, per, conf, i, benchSource, sleepCmd(gap))
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(runBin, "--vault", v, "--workdir", wd, "--", "/bin/sh", "-c", script)
			cmd.Dir = wd
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("fedmem-run session: %w\n%s", err, out)
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}
