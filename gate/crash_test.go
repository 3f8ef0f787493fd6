package gate

import (
	"fmt"
	"github.com/fedmem/fedmem/test/testutil"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHelperGateProcess is not a test: TestKillNineLoop runs the test binary
// with this test selected to get a gate process it can kill.
func TestHelperGateProcess(t *testing.T) {
	v := os.Getenv("FEDMEM_GATE_HELPER_VAULT")
	if v == "" {
		t.Skip("helper process for TestKillNineLoop")
	}
	g, err := Open(Options{Vault: v, AllowSameUser: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(3)
	}
	if _, err := g.Once(); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(4)
	}
	os.Exit(0)
}

// TestKillNineLoop kills the gate with SIGKILL at random instants while it
// works through a mixed inbox, restarting it each time; then checks that
// every draft has exactly one decision, no content was committed twice, the
// repository is valid and clean, and the audit log verifies.
func TestKillNineLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	v := trustVault(t)
	want := map[string]bool{}
	add := func(sess string, i int) {
		sd := session(t, v, sess)
		var body string
		switch i % 4 {
		case 0, 1:
			body = fmt.Sprintf("---\ntype: Fact\ntitle: Fact %s %d\nsources: [10-projects/src.md]\n---\nfact %d\n", sess, i, i)
		case 2:
			body = fmt.Sprintf("---\ntype: Fact\ntitle: Guess %s %d\n---\nguess\n", sess, i)
		case 3:
			body = "---\ntype: Fact\ntype: Fact\n---\ndup key\n" // same bytes everywhere: duplicates
		}
		name := fmt.Sprintf("d%02d.md", i)
		put(t, sd, name, body)
		want[sess+"/"+name] = true
	}
	for _, s := range []string{"k-1", "k-2", "k-3"} {
		for i := 0; i < 6; i++ {
			add(s, i)
		}
	}
	rng := testutil.Seed(t)
	run := func(kill bool) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperGateProcess$")
		cmd.Env = append(os.Environ(), "FEDMEM_GATE_HELPER_VAULT="+v)
		out := &strings.Builder{}
		cmd.Stderr, cmd.Stdout = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if kill {
			time.Sleep(time.Duration(rng.Intn(900)) * time.Millisecond)
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			return
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("final gate run: %v\n%s", err, out)
			}
		case <-time.After(2 * time.Minute):
			cmd.Process.Kill()
			t.Fatal("gate hung")
		}
	}
	for i := 0; i < 20; i++ {
		run(true)
		if i == 10 {
			add("k-4", 0)
			add("k-4", 1)
		}
	}
	run(false)
	run(false)

	checkDecidedOnce(t, v, want)
	checkInboxOnlyReceipts(t, v, want)
}
