package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// benchCompare is part (i), -only compare -base DIR: this build against
// another build's binaries (DIR holds its fedmem-run and fedmem; `make
// bench-compare BASE=REV` builds REV there), side by side in one run, for
// the figures a refactor must not worsen (issue 20): start-up (fedmem-run --
// /bin/true, alternating) and one promotion (`fedmem gate once` over one
// draft a real session of the same build wrote, outside the timed part),
// each build on its own clone of the small vault with its own gate state.
func benchCompare(o options, res *Result, bin, small, work string, log io.Writer) error {
	if o.base == "" {
		res.Skipped = append(res.Skipped, "this build against another (-only compare needs -base DIR; make bench-compare BASE=REV)")
		return nil
	}
	base, err := filepath.Abs(o.base)
	if err != nil {
		return err
	}
	for _, b := range []string{"fedmem-run", "fedmem"} {
		if _, err := os.Stat(filepath.Join(base, b)); err != nil {
			return fmt.Errorf("-base %s: %w", base, err)
		}
	}
	nw := &Series{Name: "start-up, this build", Cmd: []string{filepath.Join(bin, "fedmem-run"), "--vault", small, "--workdir", work, "--", "/bin/true"}}
	ol := &Series{Name: "start-up, base build", Cmd: []string{filepath.Join(base, "fedmem-run"), "--vault", small, "--workdir", work, "--", "/bin/true"}}
	fmt.Fprintf(log, "bench: start-up, this build vs %s, %d warm-up + %d timed runs each…\n", base, o.warmup, o.runs)
	if err := alternate(o, work, nw, ol); err != nil {
		return err
	}
	res.Series = append(res.Series, nw, ol)
	res.Ratios = append(res.Ratios, ratio("start-up this / base build", nw, ol, 1.05))

	sides := []*promoteSide{{name: "this build", bin: bin}, {name: "base build", bin: base}}
	for _, s := range sides {
		if err := s.setup(o, small, log); err != nil {
			return err
		}
		defer os.RemoveAll(s.dir)
	}
	warm := min(o.warmup, 3)
	fmt.Fprintf(log, "bench: promotion (fedmem gate once), this build vs base, %d warm-up + %d timed each…\n", warm, o.promoteRuns)
	for i := 0; i < warm+o.promoteRuns; i++ {
		order := sides
		if i%2 == 1 {
			order = []*promoteSide{sides[1], sides[0]}
		}
		for _, s := range order {
			d, err := s.once(i)
			if err != nil {
				return err
			}
			if i >= warm {
				s.series.times = append(s.series.times, float64(d.Nanoseconds())/1e6)
			}
		}
	}
	for _, s := range sides {
		s.series.summarise()
		res.Series = append(res.Series, s.series)
	}
	res.Ratios = append(res.Ratios, ratio("promotion this / base build", sides[0].series, sides[1].series, 1.05))
	return nil
}

// promoteSide is one build's promotion set-up: its clone of the vault, its
// gate state, its policy trusting its own default profile.
type promoteSide struct {
	name, bin string
	dir, v    string
	wd, state string
	series    *Series
}

func (s *promoteSide) setup(o options, small string, log io.Writer) error {
	dir, err := os.MkdirTemp(o.cache, "compare-")
	if err != nil {
		return err
	}
	s.dir, s.v, s.wd, s.state = dir, filepath.Join(dir, "vault"), filepath.Join(dir, "wd"), filepath.Join(dir, "gate-state")
	if out, err := exec.Command("git", "clone", "-q", "--local", small, s.v).CombinedOutput(); err != nil {
		return fmt.Errorf("git clone %s: %w\n%s", small, err, out)
	}
	if err := trustDefaultProfile(filepath.Join(s.bin, "fedmem-run"), s.v, s.wd); err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	s.series = &Series{Name: "promotion, " + s.name, Cmd: []string{filepath.Join(s.bin, "fedmem"), "gate", "once", "--vault", s.v, "--allow-same-user", "--state", s.state}}
	return nil
}

// once writes one draft through a real session of this side's build
// (untimed), then times one `fedmem gate once` that must promote it (its
// log, on stderr, says "decided" with state promoted).
func (s *promoteSide) once(i int) (time.Duration, error) {
	script := fmt.Sprintf("printf -- '---\\ntype: Fact\\ntitle: Bench note compare %d\\nsources: [%s]\\n---\\n\\nPromotion %d, written by make bench.\\n' > \"$FEDMEM_INBOX/fact.md.tmp\" && mv \"$FEDMEM_INBOX/fact.md.tmp\" \"$FEDMEM_INBOX/fact.md\"", i, benchSource, i)
	if out, err := runOnce([]string{filepath.Join(s.bin, "fedmem-run"), "--vault", s.v, "--workdir", s.wd, "--", "/bin/sh", "-c", script}, s.wd); err != nil {
		return 0, fmt.Errorf("%s: fedmem-run session writing draft %d: %w\n%s", s.name, i, err, out)
	}
	t0 := time.Now()
	out, err := runOnce(s.series.Cmd, s.wd)
	d := time.Since(t0)
	if err != nil {
		return 0, fmt.Errorf("%s: %s: %w\n%s", s.name, strings.Join(s.series.Cmd, " "), err, out)
	}
	if !strings.Contains(string(out), `"state":"promoted"`) {
		return 0, fmt.Errorf("%s: gate once %d did not promote the draft:\n%s", s.name, i, out)
	}
	return d, nil
}
