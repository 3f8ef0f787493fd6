package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/fedmem/fedmem/gate"
	"github.com/fedmem/fedmem/vault"
)

// Throughput is one batch the gate worked through in a single pass.
type Throughput struct {
	Name      string  `json:"name"`
	Kind      string  `json:"kind"` // mixed, held or promote
	Drafts    int     `json:"drafts"`
	Promoted  int     `json:"promoted"`
	Pending   int     `json:"pending"`
	Rejected  int     `json:"rejected"`
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"drafts_per_second"`
	// Claim→decision latency of each draft inside the pass.
	LatencyP50 float64 `json:"latency_p50_ms"`
	LatencyP90 float64 `json:"latency_p90_ms"`
	LatencyP99 float64 `json:"latency_p99_ms"`
	// CPU time of the gate's process during the pass (all threads; the
	// drafts were written before it started), and per draft.
	CPUMs         float64 `json:"cpu_ms"`
	CPUMsPerDraft float64 `json:"cpu_ms_per_draft"`
}

// benchThroughput is part (d): gate passes over batches of drafts spread
// over several sessions, on clones of the small vault: a mixed batch (three
// in four good notes, one in eight a hypothesis held for review, one in
// eight carrying a fake AWS key, rejected by the secret scanner), a batch
// the gate holds whole (drafts decided per second, held) and a batch it
// promotes whole (promotions per second). It reports drafts per second and
// percentiles of each draft's claim→decision latency.
func benchThroughput(o options, res *Result, runBin, src string, log io.Writer) error {
	for _, kind := range []string{"mixed", "held", "promote"} {
		tp, err := throughputPass(o, runBin, src, kind, log)
		if err != nil {
			return err
		}
		res.Throughput = append(res.Throughput, tp)
	}
	return nil
}

func throughputPass(o options, runBin, src, kind string, log io.Writer) (Throughput, error) {
	var tp Throughput
	work, err := os.MkdirTemp(o.cache, "throughput-")
	if err != nil {
		return tp, err
	}
	defer os.RemoveAll(work)
	v := filepath.Join(work, "vault")
	if out, err := exec.Command("git", "clone", "-q", "--local", src, v).CombinedOutput(); err != nil {
		return tp, fmt.Errorf("git clone %s: %w\n%s", src, err, out)
	}
	if err := os.MkdirAll(filepath.Join(v, vault.InboxDir), 0o755); err != nil {
		return tp, err
	}
	const sessions = 10
	n := o.throughputDrafts
	if kind == "promote" {
		// Drafts only promote from a proven session: they are written by
		// real fedmem-run sessions, under a policy that trusts the default
		// profile, citing a note of the vault as their source.
		if err := trustDefaultProfile(runBin, v, filepath.Join(work, "wd")); err != nil {
			return tp, err
		}
		per := n / sessions
		n = per * sessions
		if err := runSessions(runBin, v, filepath.Join(work, "wd"), sessions, per, 0, "verified"); err != nil {
			return tp, err
		}
	}
	for i := 0; i < n && kind != "promote"; i++ {
		dir := vault.InboxPath(v, fmt.Sprintf("tp-%02d", i%sessions))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return tp, err
		}
		var body string
		switch {
		case kind == "held" || kind == "mixed" && i%8 == 3:
			body = fmt.Sprintf("---\ntype: Fact\ntitle: Hypothesis %d\nconfidence: hypothesis\nrisk: low\n---\n\nMaybe %d.\n", i, i)
		case kind == "mixed" && i%8 == 7:
			body = fmt.Sprintf("---\ntype: Runbook\ntitle: Deploy %d\nconfidence: verified\nrisk: low\n---\n\n    AWS_ACCESS_KEY_ID=AKIAZ3MDQ7LPXW4VN2TB\n    AWS_SECRET_ACCESS_KEY=q8Hn3vT0pZkR7wXb2Lm5Yc9Fd1Gs4Je6Ua0Vi3K%d\n", i, i%10)
		default:
			body = fmt.Sprintf("---\ntype: Fact\ntitle: Throughput fact %d\nconfidence: verified\nrisk: low\nsources:\n  - resource: docs/threat-model.md\n---\n\nFact number %d, written by make bench.\n", i, i)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("draft-%04d.md", i)), []byte(body), 0o644); err != nil {
			return tp, err
		}
	}
	g, err := gate.Open(gate.Options{Vault: v, AllowSameUser: true, StateDir: filepath.Join(work, "gate-state")})
	if err != nil {
		return tp, fmt.Errorf("gate: %w", err)
	}
	defer g.Close()
	fmt.Fprintf(log, "bench: one gate pass over %d %s drafts in %d sessions…\n", n, kind, sessions)

	t0, cpu0 := time.Now(), selfCPU()
	s, err := g.Once()
	d := time.Since(t0)
	if err != nil {
		return tp, fmt.Errorf("gate pass: %w", err)
	}
	if len(s.Errors) > 0 {
		return tp, fmt.Errorf("gate pass: %v", s.Errors)
	}
	if t := s.Timing; t != nil && os.Getenv("FEDMEM_BENCH_TRACE") != "" {
		fmt.Fprintf(log, "bench: %s pass: %d claims, %d groups; claim %.0f ms, decide %.0f ms (flushes %.0f), publish %.0f ms, wall %.0f ms\n",
			kind, t.Claims, t.Groups, t.ClaimMs, t.DecideMs, t.FlushMs, t.PublishMs, float64(d.Microseconds())/1000)
	}
	var lat []float64
	for _, dec := range s.Decisions {
		lat = append(lat, float64(dec.Decided.Sub(dec.FirstSeen).Nanoseconds())/1e6)
	}
	sort.Float64s(lat)
	tp = Throughput{
		Name:     fmt.Sprintf("gate pass, %d %s drafts, %s-note vault", n, kind, human(o.small)),
		Kind:     kind,
		Drafts:   len(s.Decisions),
		Promoted: s.Promoted, Pending: s.Pending, Rejected: s.Rejected,
		Seconds: d.Seconds(),
	}
	if len(s.Decisions) > 0 {
		tp.CPUMs = float64((selfCPU() - cpu0).Microseconds()) / 1000
		tp.CPUMsPerDraft = tp.CPUMs / float64(len(s.Decisions))
	}
	if d > 0 {
		tp.PerSecond = float64(len(s.Decisions)) / d.Seconds()
	}
	if len(lat) > 0 {
		tp.LatencyP50, tp.LatencyP90, tp.LatencyP99 = quantile(lat, 0.5), quantile(lat, 0.9), quantile(lat, 0.99)
	}
	if kind == "promote" && s.Promoted < len(s.Decisions) {
		for _, dec := range s.Decisions {
			if dec.State != gate.StatePromoted {
				fmt.Fprintf(log, "bench: a draft of the promote batch was %s: %+v\n", dec.State, dec.Reasons)
				break
			}
		}
	}
	if tp.Drafts != n {
		return tp, fmt.Errorf("gate pass decided %d of %d drafts (deferred %d)", tp.Drafts, n, s.Deferred)
	}
	return tp, nil
}

func printThroughput(w io.Writer, res *Result) {
	if len(res.Throughput) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%-40s %7s %9s %9s %9s %9s %11s  %s\n", "gate throughput", "drafts", "drafts/s", "p50 ms", "p90 ms", "p99 ms", "cpu ms/draft", "outcome")
	for _, t := range res.Throughput {
		fmt.Fprintf(w, "%-40s %7d %9.1f %9.2f %9.2f %9.2f %11.2f  %d promoted, %d pending, %d rejected\n",
			t.Name, t.Drafts, t.PerSecond, t.LatencyP50, t.LatencyP90, t.LatencyP99, t.CPUMsPerDraft, t.Promoted, t.Pending, t.Rejected)
	}
	fmt.Fprintln(w, "(latency: claim→decision of each draft within the pass; the gate claims every draft first, so it includes waiting\n behind earlier drafts; validation, secret scan, commit and receipt included)")
}

// selfCPU is the CPU time (user and system, every thread) of this process:
// the gate's, during a pass over drafts written before it.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
