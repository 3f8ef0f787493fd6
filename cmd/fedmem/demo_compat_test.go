package main

import "github.com/fedmem/fedmem/cmd/fedmem/demo"

// The demo's steps live in package demo (its own tests are there); these
// names keep demo_test.go, written against the command's old internals,
// running as it was.

// demoResult is demo.Result with the field order demo_test.go's literals use
// (a local type: vet flags unkeyed literals of an imported struct).
type demoResult struct {
	expect, outcome, label, detail string
}

var (
	snapshot      = demo.Snapshot
	diffSnapshots = demo.DiffSnapshots
	withoutEnv    = demo.WithoutEnv
)

func parseDemoOutput(b []byte) []demoResult {
	var out []demoResult
	for _, r := range demo.ParseOutput(b) {
		out = append(out, demoResult{r.Expect, r.Outcome, r.Label, r.Detail})
	}
	return out
}

func sessionFromInfo(info []demoResult) string {
	var rs []demo.Result
	for _, r := range info {
		rs = append(rs, demo.Result{Expect: r.expect, Outcome: r.outcome, Label: r.label, Detail: r.detail})
	}
	return demo.SessionFromInfo(rs)
}
