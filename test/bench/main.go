// Command bench measures fedmem-run against the performance targets of
// DESIGN.md and prints the figures; it is run by `make bench` and asserts
// nothing (no timing assertion lives in any test).
//
// It measures, with alternating runs after a warm-up:
//
//	(a) `fedmem-run -- /bin/true` against hardened bubblewrap with the same
//	    binds (vault read-only, inbox and workdir writable): ratio of medians,
//	    target ≤ 1.0×;
//	(b) fedmem-run start-up on a 1k-note vault against a 100k-note vault:
//	    ratio of medians, target ≤ 1.05;
//	(c) (-only receipts) a read-heavy session (grep -r, git log -p) on the
//	    large vault with read receipts on, off and bare: on / off, target
//	    ≤ 1.10 (receipts.go);
//	(d) (-only propose) a go build and an npm install under workdir:
//	    propose against workdir: direct: ratio of medians, target ≤ 1.10
//	    (propose.go).
//
// The vaults are generated once into a cache directory (default
// .cache/bench/ under the module root) and reused. bubblewrap is installed
// with apt-get when it is missing and the bench runs as root.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"time"

	"github.com/fedmem/fedmem/vault"
)

type options struct {
	runs    int
	warmup  int
	small   int
	large   int
	cache   string
	bin     string
	jsonOut bool
	only    string
	base    string

	proposeRuns      int
	receiptRuns      int
	promoteRuns      int
	promoteSizes     string
	throughputDrafts int
	spares           int
	reviewSize       int
	reviewBatch      int
}

// Series is one measured command.
type Series struct {
	Name   string   `json:"name"`
	Cmd    []string `json:"cmd"`
	Runs   int      `json:"runs"`
	Median float64  `json:"median_ms"`
	P90    float64  `json:"p90_ms"`
	Min    float64  `json:"min_ms"`
	Mean   float64  `json:"mean_ms"`
	// CPU is the median CPU time (user and system) of a run, the command's
	// and every process it waited for (wait4's rusage): on the shared
	// machine it moves less than wall time with the other work.
	CPU   float64   `json:"cpu_median_ms,omitempty"`
	times []float64 // ms
	cpus  []float64 // ms
}

// Ratio is one compared pair against its target.
type Ratio struct {
	Name   string  `json:"name"`
	Num    string  `json:"numerator"`
	Den    string  `json:"denominator"`
	Value  float64 `json:"value"`
	Target float64 `json:"target,omitempty"` // 0: no numeric target
	Met    bool    `json:"met"`
	Note   string  `json:"note,omitempty"`
}

// Result is the whole bench output (-json).
type Result struct {
	Host       map[string]string `json:"host"`
	Series     []*Series         `json:"series"`
	Ratios     []Ratio           `json:"ratios"`
	Throughput []Throughput      `json:"gate_throughput,omitempty"`
	Latency    []Latency         `json:"gate_latency,omitempty"`
	Targets    []Target          `json:"targets"`
	// Phases: median ms of each start-up phase (the "started" event), of
	// each teardown phase (the "exit" event) and of prestart,
	// teardown.after, teardown.whole and whole (this bench's own clock
	// around each run: benchPhases).
	Phases    map[string]float64 `json:"startup_phases_ms,omitempty"`
	PhaseRuns int                `json:"startup_phase_runs,omitempty"`
	Layers    json.RawMessage    `json:"fedmem_run_layers,omitempty"`
	// Cred: the credential-injecting path (part g, -only cred).
	Cred    *CredBench `json:"credential_proxy,omitempty"`
	Skipped []string   `json:"not_measured,omitempty"`
}

func main() {
	var o options
	flag.IntVar(&o.runs, "n", 200, "timed runs of each command (alternating)")
	flag.IntVar(&o.warmup, "warmup", 20, "untimed warm-up runs of each command")
	flag.IntVar(&o.small, "small", 1000, "notes in the small vault")
	flag.IntVar(&o.large, "large", 100000, "notes in the large vault")
	flag.StringVar(&o.cache, "cache", "", "directory for generated vaults (default <module>/.cache/bench)")
	flag.StringVar(&o.bin, "bin", os.Getenv("FEDMEM_BIN"), "directory holding fedmem-run and fedmem (default $FEDMEM_BIN, else ./bin)")
	flag.BoolVar(&o.jsonOut, "json", false, "print the result as JSON on stdout")
	flag.StringVar(&o.only, "only", "", "run one part only: bwrap, backends, size, receipts, promote, throughput, latency, review, cred, propose or compare")
	flag.StringVar(&o.base, "base", "", "directory holding another build's fedmem-run and fedmem, for -only compare (make bench-compare BASE=REV)")
	flag.IntVar(&o.receiptRuns, "receipts-n", 5, "timed runs of each read-heavy session with receipts on, off and bare (-only receipts)")
	flag.IntVar(&o.proposeRuns, "propose-n", 5, "timed runs of each build under workdir: propose and direct (-only propose)")
	flag.IntVar(&o.reviewSize, "review-size", 100000, "notes in the vault of the review bench")
	flag.IntVar(&o.reviewBatch, "review-batch", 400, "held drafts approved by one batch in the review bench")
	flag.IntVar(&o.throughputDrafts, "throughput-drafts", 500, "drafts in each gate throughput pass")
	flag.IntVar(&o.spares, "spares", 4096, "spare files the latency bench's `gate run` makes before the drafts arrive (gate run --spares; 0: none)")
	flag.IntVar(&o.promoteRuns, "promote-n", 20, "timed promotions per vault size (alternating with git add && git commit)")
	flag.StringVar(&o.promoteSizes, "promote-sizes", "1000,10000,100000", "vault sizes (notes) for the promotion bench")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the bench process (the gate runs in it) to FILE")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(o, os.Stdout, os.Stderr); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(o options, stdout, log io.Writer) error {
	if o.bin == "" {
		o.bin = "bin"
	}
	bin, err := filepath.Abs(o.bin)
	if err != nil {
		return err
	}
	runBin := filepath.Join(bin, "fedmem-run")
	if _, err := os.Stat(runBin); err != nil {
		return fmt.Errorf("%s: %w (run `make build` first)", runBin, err)
	}
	if o.cache == "" {
		root, err := moduleRoot()
		if err != nil {
			return err
		}
		o.cache = filepath.Join(root, ".cache", "bench")
	}
	if err := os.MkdirAll(o.cache, 0o755); err != nil {
		return err
	}
	res := &Result{Host: hostInfo()}

	small, err := ensureVault(o.cache, o.small, bin, log)
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "fedmem-bench-work-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	keep := listInbox(small)
	err = layers(res, runBin, small, work)
	cleanInbox(small, keep)
	if err != nil {
		return err
	}
	if o.only == "" || o.only == "bwrap" {
		if err := benchBwrap(o, res, runBin, small, work, log); err != nil {
			return err
		}
		if err := benchPhases(o, res, runBin, small, work, log); err != nil {
			return err
		}
	}
	if o.only == "" || o.only == "backends" {
		if err := benchBackends(o, res, runBin, small, work, log); err != nil {
			return err
		}
	}
	if o.only == "" || o.only == "size" {
		large, err := ensureVault(o.cache, o.large, bin, log)
		if err != nil {
			return err
		}
		if err := benchSize(o, res, runBin, small, large, work, log); err != nil {
			return err
		}
	}
	if o.only == "" || o.only == "receipts" {
		large, err := ensureVault(o.cache, o.large, bin, log)
		if err != nil {
			return err
		}
		if err := benchReceipts(o, res, runBin, large, work, log); err != nil {
			return err
		}
	}
	if o.only == "" || o.only == "view" {
		if err := benchView(o, res, bin, work, log); err != nil {
			return err
		}
	}
	if o.only == "" || o.only == "promote" {
		if err := benchPromotion(o, res, bin, log); err != nil {
			return err
		}
	}
	if o.only == "" || o.only == "throughput" {
		if err := benchThroughput(o, res, runBin, small, log); err != nil {
			return err
		}
	}
	if o.only == "" || o.only == "latency" {
		if err := benchLatency(o, res, runBin, small, log); err != nil {
			return err
		}
	}
	if o.only == "" || o.only == "propose" {
		if err := benchPropose(o, res, runBin, small, log); err != nil {
			return err
		}
	}
	if o.only == "" || o.only == "review" {
		if err := benchReview(o, res, bin, log); err != nil {
			return err
		}
	}
	if o.only == "" || o.only == "cred" {
		if err := benchCred(o, res, runBin, small, log); err != nil {
			return err
		}
	}
	if o.only == "compare" || o.only == "" && o.base != "" {
		if err := benchCompare(o, res, bin, small, work, log); err != nil {
			return err
		}
	}
	res.Targets = append(targets(res), credTargets(res)...)

	res.Host["loadavg_end"] = loadavg()
	if o.jsonOut {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	printTable(stdout, res)
	return nil
}

// benchBwrap is part (a): fedmem-run -- /bin/true against hardened bwrap.
func benchBwrap(o options, res *Result, runBin, v, work string, log io.Writer) error {
	bwrap, err := ensureBwrap(log)
	if err != nil {
		res.Skipped = append(res.Skipped, "fedmem-run vs bubblewrap: "+err.Error())
		fmt.Fprintln(log, "bench: skipping the bubblewrap comparison:", err)
		return nil
	}
	if out, err := exec.Command(bwrap, "--version").Output(); err == nil {
		res.Host["bwrap"] = strings.TrimSpace(string(out))
	}
	inbox := filepath.Join(v, vault.InboxDir, "bench-bwrap")
	if err := os.MkdirAll(inbox, 0o755); err != nil {
		return err
	}
	fr := &Series{Name: "fedmem-run -- /bin/true", Cmd: []string{runBin, "--vault", v, "--workdir", work, "--", "/bin/true"}}
	bw := &Series{Name: "bwrap (hardened) /bin/true", Cmd: []string{bwrap,
		"--unshare-all", "--share-net", "--unshare-user", "--disable-userns",
		"--new-session", "--die-with-parent", "--cap-drop", "ALL",
		"--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
		"--ro-bind", v, v, "--bind", inbox, inbox, "--bind", work, work,
		"--chdir", work, "/bin/true"}}
	fmt.Fprintf(log, "bench: fedmem-run vs bwrap, %d warm-up + %d timed runs each…\n", o.warmup, o.runs)
	if err := alternate(o, work, fr, bw); err != nil {
		return err
	}
	res.Series = append(res.Series, fr, bw)
	res.Ratios = append(res.Ratios, ratio("fedmem-run / bwrap", fr, bw, 1.0))
	return nil
}

// benchSize is part (b): start-up on a small against a large vault.
func benchSize(o options, res *Result, runBin, small, large, work string, log io.Writer) error {
	s := &Series{Name: fmt.Sprintf("fedmem-run, %s-note vault", human(o.small)), Cmd: []string{runBin, "--vault", small, "--workdir", work, "--", "/bin/true"}}
	l := &Series{Name: fmt.Sprintf("fedmem-run, %s-note vault", human(o.large)), Cmd: []string{runBin, "--vault", large, "--workdir", work, "--", "/bin/true"}}
	fmt.Fprintf(log, "bench: %s vs %s notes, %d warm-up + %d timed runs each…\n", human(o.small), human(o.large), o.warmup, o.runs)
	if err := alternate(o, work, s, l); err != nil {
		return err
	}
	res.Series = append(res.Series, s, l)
	res.Ratios = append(res.Ratios, ratio(fmt.Sprintf("%s / %s notes", human(o.large), human(o.small)), l, s, 1.05))
	return nil
}

// alternate runs a and b in turn (the order flips every round so neither
// always runs on a warm cache), after a warm-up, and records wall times.
// Session directories that fedmem-run leaves in the inbox are removed
// between runs, outside the timed part, so the inbox does not grow.
func alternate(o options, work string, series ...*Series) error {
	inboxes := map[string]map[string]bool{}
	for _, s := range series {
		if v := flagValue(s.Cmd, "--vault"); v != "" {
			inboxes[v] = listInbox(v)
		}
	}
	for _, s := range series {
		if out, err := runOnce(s.Cmd, work); err != nil {
			return fmt.Errorf("%s: %w\n%s", strings.Join(s.Cmd, " "), err, out)
		}
	}
	for i := 0; i < o.warmup+o.runs; i++ {
		order := series
		if i%2 == 1 {
			order = make([]*Series, len(series))
			for j, s := range series {
				order[len(series)-1-j] = s
			}
		}
		for _, s := range order {
			t0 := time.Now()
			out, cpu, err := runTimed(s.Cmd, work)
			d := time.Since(t0)
			if err != nil {
				return fmt.Errorf("%s: %w\n%s", strings.Join(s.Cmd, " "), err, out)
			}
			if i >= o.warmup {
				s.times = append(s.times, float64(d.Nanoseconds())/1e6)
				s.cpus = append(s.cpus, cpu)
			}
		}
		for v, keep := range inboxes {
			cleanInbox(v, keep)
		}
	}
	for _, s := range series {
		s.summarise()
	}
	return nil
}

func runOnce(argv []string, dir string) ([]byte, error) {
	out, _, err := runTimed(argv, dir)
	return out, err
}

// runTimed runs argv in dir and returns its stderr and the CPU time, in
// ms, of it and of every process it waited for.
func runTimed(argv []string, dir string) ([]byte, float64, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	var errb bytes.Buffer
	cmd.Stderr = &errb
	cmd.Stdout = io.Discard
	err := cmd.Run()
	cpu := 0.0
	if cmd.ProcessState != nil {
		cpu = float64((cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Microseconds()) / 1e3
	}
	return errb.Bytes(), cpu, err
}

// layers runs fedmem-run once with --report and keeps the report's layers,
// so the figures say which protections were on when they were taken.
func layers(res *Result, runBin, v, work string) error {
	rep := filepath.Join(work, "report.json")
	defer os.Remove(rep)
	cmd := []string{runBin, "--vault", v, "--workdir", work, "--report", rep, "--", "/bin/true"}
	if out, err := runOnce(cmd, work); err != nil {
		return fmt.Errorf("%s: %w\n%s", strings.Join(cmd, " "), err, out)
	}
	b, err := os.ReadFile(rep)
	if err != nil {
		return fmt.Errorf("fedmem-run --report: %w", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("fedmem-run --report %s: %w", rep, err)
	}
	res.Layers = m["layers"]
	return nil
}

func listInbox(v string) map[string]bool {
	keep := map[string]bool{}
	ents, _ := os.ReadDir(filepath.Join(v, vault.InboxDir))
	for _, e := range ents {
		keep[e.Name()] = true
	}
	return keep
}

func cleanInbox(v string, keep map[string]bool) {
	dir := filepath.Join(v, vault.InboxDir)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !keep[e.Name()] {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
	sess := filepath.Join(v, vault.SessionsDir)
	if keep[filepath.Base(vault.SessionsDir)] {
		// Session records: keep the directory, drop the records.
		ents, _ := os.ReadDir(sess)
		for _, e := range ents {
			os.RemoveAll(filepath.Join(sess, e.Name()))
		}
	}
}

func flagValue(argv []string, name string) string {
	for i := 0; i+1 < len(argv); i++ {
		if argv[i] == "--" {
			break
		}
		if argv[i] == name {
			return argv[i+1]
		}
	}
	return ""
}

func (s *Series) summarise() {
	t := append([]float64(nil), s.times...)
	sort.Float64s(t)
	s.Runs = len(t)
	if len(t) == 0 {
		return
	}
	s.Median = quantile(t, 0.5)
	s.P90 = quantile(t, 0.9)
	s.Min = t[0]
	var sum float64
	for _, x := range t {
		sum += x
	}
	s.Mean = sum / float64(len(t))
	if len(s.cpus) == len(s.times) {
		c := append([]float64(nil), s.cpus...)
		sort.Float64s(c)
		s.CPU = quantile(c, 0.5)
	}
}

// quantile of sorted data, linear interpolation between closest ranks.
func quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	lo := int(pos)
	if lo+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	frac := pos - float64(lo)
	return sorted[lo]*(1-frac) + sorted[lo+1]*frac
}

func ratio(name string, num, den *Series, target float64) Ratio {
	r := Ratio{Name: name, Num: num.Name, Den: den.Name, Target: target}
	if den.Median > 0 {
		r.Value = num.Median / den.Median
	}
	r.Met = r.Value > 0 && r.Value <= target
	return r
}

// cpuRatio is num's median CPU time over den's (no target: what the
// wall-time ratio of the same runs leaves to the other work on the
// machine).
func cpuRatio(name string, num, den *Series) Ratio {
	r := Ratio{Name: name, Num: num.Name, Den: den.Name, Note: "CPU time, median"}
	if den.CPU > 0 {
		r.Value = num.CPU / den.CPU
	}
	return r
}

func printTable(w io.Writer, res *Result) {
	fmt.Fprintf(w, "\nhost: %s, %s cpus, kernel %s", res.Host["go"], res.Host["cpus"], res.Host["kernel"])
	if b := res.Host["bwrap"]; b != "" {
		fmt.Fprintf(w, ", %s", b)
	}
	fmt.Fprintf(w, "\nload average (1/5/15 min) at start %s, at end %s: other work on the machine skews both sides\n", res.Host["loadavg_start"], res.Host["loadavg_end"])
	if len(res.Layers) > 0 {
		fmt.Fprintf(w, "fedmem-run layers: %s\n", compact(res.Layers))
	}
	if len(res.Series) > 0 {
		fmt.Fprintf(w, "\n%-34s %6s %10s %10s %10s %10s\n", "command", "runs", "median ms", "p90 ms", "min ms", "cpu ms")
	}
	for _, s := range res.Series {
		cpu := "—"
		if s.CPU > 0 {
			cpu = fmt.Sprintf("%.2f", s.CPU)
		}
		fmt.Fprintf(w, "%-34s %6d %10.2f %10.2f %10.2f %10s\n", s.Name, s.Runs, s.Median, s.P90, s.Min, cpu)
	}
	if len(res.Ratios) > 0 {
		fmt.Fprintf(w, "\n%-34s %10s %10s  %s\n", "ratio of medians", "value", "target", "")
	}
	for _, r := range res.Ratios {
		verdict, target := "met", fmt.Sprintf("≤%.2f×", r.Target)
		switch {
		case r.Target == 0:
			verdict, target = "("+r.Note+")", "—"
		case !r.Met:
			verdict = "NOT MET"
		}
		fmt.Fprintf(w, "%-34s %9.3f× %9s  %s\n", r.Name, r.Value, target, verdict)
		if r.Target != 0 && r.Note != "" {
			fmt.Fprintf(w, "%-34s   (%s)\n", "", r.Note)
		}
	}
	printPhases(w, res)
	printThroughput(w, res)
	printLatency(w, res)
	printCred(w, res)
	printTargets(w, res)
	if len(res.Skipped) > 0 {
		fmt.Fprintln(w, "\nnot measured (no figure is invented for these):")
		for _, s := range res.Skipped {
			fmt.Fprintln(w, "  -", s)
		}
	}
}

func compact(b json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return string(b)
	}
	return buf.String()
}

func human(n int) string {
	switch {
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	default:
		return fmt.Sprint(n)
	}
}

func hostInfo() map[string]string {
	h := map[string]string{"go": runtime.Version(), "cpus": fmt.Sprint(runtime.NumCPU())}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h["kernel"] = strings.TrimSpace(string(b))
	}
	h["loadavg_start"] = loadavg()
	return h
}

// loadavg is the first three fields of /proc/loadavg: figures taken on a
// busy machine say so.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside the fedmem module; pass -cache DIR")
	}
	return filepath.Dir(gomod), nil
}

// ensureBwrap returns the path of bwrap, installing Debian's bubblewrap
// package when it is missing and we are root.
func ensureBwrap(log io.Writer) (string, error) {
	if p, err := exec.LookPath("bwrap"); err == nil {
		return p, nil
	}
	if os.Geteuid() != 0 {
		return "", errors.New("bwrap not installed and not root (apt-get install bubblewrap)")
	}
	fmt.Fprintln(log, "bench: installing bubblewrap…")
	install := func() error {
		cmd := exec.Command("apt-get", "install", "-y", "-qq", "bubblewrap")
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		cmd.Stdout, cmd.Stderr = log, log
		return cmd.Run()
	}
	if install() != nil {
		upd := exec.Command("apt-get", "update", "-qq")
		upd.Stdout, upd.Stderr = log, log
		if err := upd.Run(); err != nil {
			return "", fmt.Errorf("apt-get update: %w", err)
		}
		if err := install(); err != nil {
			return "", fmt.Errorf("apt-get install bubblewrap: %w", err)
		}
	}
	return exec.LookPath("bwrap")
}

// ensureVault returns a vault with n notes under cache, generating it once.
// The vault is made by `fedmem init` when the binary has it (else the
// layout of package vault plus `git init`), filled with n small OKF notes
// across the architecture's folders, and committed.
func ensureVault(cache string, n int, bin string, log io.Writer) (string, error) {
	return ensureVaultWith(cache, n, 0, bin, log)
}

// ensureVaultWith is ensureVault whose every hiddenEvery-th note is not
// in force (deprecated, or withheld every other time): the in-force
// view's bench (view.go). 0: every note in force.
func ensureVaultWith(cache string, n, hiddenEvery int, bin string, log io.Writer) (string, error) {
	dir := filepath.Join(cache, fmt.Sprintf("vault-%d", n))
	if hiddenEvery > 0 {
		dir = filepath.Join(cache, fmt.Sprintf("vault-%d-hidden-%d", n, hiddenEvery))
	}
	stamp := dir + ".ok"
	if _, err := os.Stat(stamp); err == nil && vault.IsVault(dir) {
		return dir, nil
	}
	fmt.Fprintf(log, "bench: generating a %d-note vault in %s (once)…\n", n, dir)
	t0 := time.Now()
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := initVault(dir, bin, log); err != nil {
		return "", err
	}
	folders := []string{"10-projects", "20-domains", "30-clients", "40-workflows", "70-decisions"}
	const perDir = 100
	for i := 0; i < n; i++ {
		sub := filepath.Join(dir, folders[i%len(folders)], fmt.Sprintf("d%04d", i/perDir/len(folders)))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return "", err
		}
		status := "stable"
		if hiddenEvery > 0 && i%hiddenEvery == 0 {
			status = "deprecated"
			if i/hiddenEvery%2 == 1 {
				status = "stable\nwithheld: {by: \"process:fedmem-gate\", reason: bench}"
			}
		}
		body := fmt.Sprintf("---\ntype: note\ntitle: Bench note %d\nstatus: %s\ncreated: 2026-01-01T00:00:00+00:00\n---\n# Bench note %d\n\nA small note used by `make bench` to give the vault its size.\nSee [[note-%d]].\n", i, status, i, (i+1)%n)
		if err := os.WriteFile(filepath.Join(sub, fmt.Sprintf("note-%06d.md", i)), []byte(body), 0o644); err != nil {
			return "", err
		}
	}
	git := func(args ...string) error {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=fedmem bench", "-c", "user.email=bench@fedmem.invalid", "-c", "core.fsync=none"}, args...)...)
		var eb bytes.Buffer
		cmd.Stderr = &eb
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, eb.String())
		}
		return nil
	}
	if err := git("add", "-A"); err != nil {
		return "", err
	}
	if err := git("commit", "-q", "--no-verify", "-m", fmt.Sprintf("bench: %d notes", n)); err != nil {
		return "", err
	}
	if err := os.WriteFile(stamp, []byte(time.Now().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		return "", err
	}
	fmt.Fprintf(log, "bench: %d-note vault ready in %s\n", n, time.Since(t0).Round(time.Second))
	return dir, nil
}

func initVault(dir, bin string, log io.Writer) error {
	fedmem := filepath.Join(bin, "fedmem")
	if _, err := os.Stat(fedmem); err == nil {
		cmd := exec.Command(fedmem, "init", dir)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err == nil && vault.IsVault(dir) {
			return nil
		}
		fmt.Fprintf(log, "bench: `fedmem init` unavailable (%s); making the layout directly\n", firstLine(out.String()))
		os.RemoveAll(dir)
	}
	for _, f := range vault.Folders {
		if err := os.MkdirAll(filepath.Join(dir, f), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f, ".keep"), nil, 0o644); err != nil {
			return err
		}
	}
	cmd := exec.Command("git", "init", "-q", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git init %s: %w\n%s", dir, err, out)
	}
	return nil
}

func firstLine(s string) string {
	sc := bufio.NewScanner(strings.NewReader(s))
	if sc.Scan() {
		return sc.Text()
	}
	return "no output"
}
