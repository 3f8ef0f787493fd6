package main

import (
	"math"
	"testing"
)

// The figures make bench prints are only as good as these helpers.

func TestQuantile(t *testing.T) {
	cases := []struct {
		data []float64
		q    float64
		want float64
	}{
		{[]float64{5}, 0.5, 5},
		{[]float64{1, 2, 3}, 0.5, 2},
		{[]float64{1, 2, 3, 4}, 0.5, 2.5},
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 0.9, 10},
		{[]float64{0, 10}, 0.9, 9},
		{[]float64{1, 2, 3}, 1, 3},
	}
	for _, c := range cases {
		if got := quantile(c.data, c.q); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("quantile(%v, %v) = %v, want %v", c.data, c.q, got, c.want)
		}
	}
}

func TestSummariseAndRatio(t *testing.T) {
	a := &Series{Name: "a", times: []float64{30, 10, 20}}
	b := &Series{Name: "b", times: []float64{5, 15, 10, 20}}
	a.summarise()
	b.summarise()
	if a.Median != 20 || a.Min != 10 || a.Mean != 20 || a.Runs != 3 {
		t.Errorf("a summarised as %+v", a)
	}
	if b.Median != 12.5 {
		t.Errorf("b median %v, want 12.5", b.Median)
	}
	r := ratio("a/b", a, b, 1.5)
	if math.Abs(r.Value-1.6) > 1e-9 || r.Met {
		t.Errorf("ratio %+v, want 1.6 and not met", r)
	}
	if r := ratio("b/a", b, a, 1.0); !r.Met {
		t.Errorf("ratio %+v should meet its target", r)
	}
	if r := ratio("x/empty", a, &Series{}, 1.0); r.Met || r.Value != 0 {
		t.Errorf("ratio against an empty series %+v must not be met", r)
	}
}

func TestFlagValue(t *testing.T) {
	argv := []string{"fedmem-run", "--vault", "/v", "--", "cmd", "--vault", "/other"}
	if got := flagValue(argv, "--vault"); got != "/v" {
		t.Errorf("flagValue = %q, want /v", got)
	}
	if got := flagValue([]string{"fedmem-run", "--", "cmd", "--vault", "/x"}, "--vault"); got != "" {
		t.Errorf("flagValue read past --: %q", got)
	}
}
