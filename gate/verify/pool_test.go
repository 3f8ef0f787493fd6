package verify

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/fedmem/fedmem/gate/decide"
	"github.com/fedmem/fedmem/gate/policy"
)

// gatedRun is a verifier function whose runs block until released, so the
// test sees the pool's bounds while runs are in flight.
type gatedRun struct {
	mu      sync.Mutex
	started []string // drafts, in order
	release chan struct{}
	began   chan struct{}
}

func newGatedRun() *gatedRun {
	return &gatedRun{release: make(chan struct{}), began: make(chan struct{}, 64)}
}

func (g *gatedRun) run(ctx context.Context, v policy.Verifier, draft []byte, _ []decide.SourceProof) decide.VerifierRun {
	g.mu.Lock()
	g.started = append(g.started, string(draft))
	g.mu.Unlock()
	g.began <- struct{}{}
	select {
	case <-g.release:
	case <-ctx.Done():
	}
	return decide.VerifierRun{Name: v.Name, Passed: strings.HasPrefix(string(draft), "good"), Output: string(draft)}
}

func (g *gatedRun) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.started)
}

func TestPoolBoundsAndResults(t *testing.T) {
	g := newGatedRun()
	p := NewPool(context.Background(), g.run)
	v := policy.Verifier{Name: "check", Command: []string{"true"}}

	// One session may have verifyPerSession runs at once.
	for i := range verifyPerSession + 2 {
		if _, ok := p.Result("s1", v, fmt.Appendf(nil, "good %d", i), nil); ok {
			t.Fatalf("draft %d: a result before any run ended", i)
		}
	}
	for range verifyPerSession {
		<-g.began
	}
	if n := g.count(); n != verifyPerSession {
		t.Fatalf("one session started %d runs, want %d (verifyPerSession)", n, verifyPerSession)
	}
	// Other sessions fill the overall bound, and no more.
	for i := range verifyBound * 2 {
		p.Result(fmt.Sprintf("s%d", i+2), v, fmt.Appendf(nil, "good other %d", i), nil)
	}
	for range verifyBound - verifyPerSession {
		<-g.began
	}
	if n := g.count(); n != verifyBound {
		t.Fatalf("%d runs in flight, want the bound %d", n, verifyBound)
	}
	// Asking again for a draft in flight does not start it twice.
	p.Result("s1", v, []byte("good 0"), nil)
	if n := g.count(); n != verifyBound {
		t.Fatalf("asking for a run in flight started another: %d runs", n)
	}

	close(g.release)
	p.Wait()
	select {
	case <-p.Ends():
	default:
		t.Fatal("no signal on Ends after runs ended")
	}
	res, ok := p.Result("s1", v, []byte("good 0"), nil)
	if !ok || !res.Passed || res.Output != "good 0" {
		t.Fatalf("finished result = %+v, %v; want the run's own result", res, ok)
	}
	// The result is keyed by the draft's bytes and by the verifier: a
	// changed draft or another command is verified again, not reused.
	if _, ok := p.Result("s1", v, []byte("good 0 changed"), nil); ok {
		t.Fatal("a changed draft reused another draft's result")
	}
	v2 := v
	v2.Command = []string{"false"}
	if _, ok := p.Result("s1", v2, []byte("good 0"), nil); ok {
		t.Fatal("another command reused the first command's result")
	}
	if _, ok := p.Result("s1", v, []byte("good 0"), []decide.SourceProof{{Resource: "10-facts/x.md"}}); ok {
		t.Fatal("other sources reused the result")
	}
	p.Wait()
}

func TestPoolCancelledRunIsNoResult(t *testing.T) {
	g := newGatedRun()
	ctx, cancel := context.WithCancel(context.Background())
	p := NewPool(ctx, g.run)
	v := policy.Verifier{Name: "check"}
	p.Result("s1", v, []byte("good"), nil)
	<-g.began
	cancel()
	p.Wait()
	if _, ok := p.Result("s1", v, []byte("good"), nil); ok {
		t.Fatal("a run cut off by the gate's end was kept as a result")
	}
	p.Wait()
}

func TestFindFedmemRun(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(FedmemRunEnv, "relative/fedmem-run")
	if _, err := findFedmemRun(); err == nil || !strings.Contains(err.Error(), "not an absolute path") {
		t.Fatalf("relative $%s: %v", FedmemRunEnv, err)
	}
	t.Setenv(FedmemRunEnv, filepath.Join(dir, "missing"))
	if _, err := findFedmemRun(); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("missing: %v", err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(FedmemRunEnv, plain)
	if _, err := findFedmemRun(); err == nil || !strings.Contains(err.Error(), "not an executable") {
		t.Fatalf("not executable: %v", err)
	}
	if err := os.Chmod(plain, 0o755); err != nil {
		t.Fatal(err)
	}
	if p, err := findFedmemRun(); err != nil || p != plain {
		t.Fatalf("executable: %q, %v", p, err)
	}
	r := NewRunner(dir)
	if r.FindErr() != nil {
		t.Fatalf("NewRunner: %v", r.FindErr())
	}
}

func TestPrintableOutput(t *testing.T) {
	got := printable([]byte("ok\x1b[31m\tline\n\u202e\x85é"), 100)
	if strings.ContainsAny(got, "\x1b\x85") {
		t.Fatalf("control characters kept: %q", got)
	}
	if !strings.Contains(got, "\tline\n") || !strings.HasSuffix(got, "(100 bytes in all)") {
		t.Fatalf("printable = %q", got)
	}
	// A rune cut by the output bound is dropped, not shown as garbage.
	if got := printable([]byte("ab\xc3"), 3); got != "ab… (3 bytes in all)" {
		t.Fatalf("cut rune: %q", got)
	}
	s := outputSink{h: sha256.New()}
	big := []byte(strings.Repeat("x", maxVerifierOutput+10))
	s.Write(big)
	if len(s.keep) != maxVerifierOutput || s.n != int64(len(big)) {
		t.Fatalf("sink kept %d of %d, counted %d", len(s.keep), len(big), s.n)
	}
}
