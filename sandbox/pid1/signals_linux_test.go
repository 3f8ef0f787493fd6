package pid1

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The init catches only swallowedSignals and forwardedSignals (issue 9:
// catching every signal cost a locked-thread round trip each). Every other
// signal must already be dropped by the Go runtime: a helper process
// holding exactly those sets gets every signal but SIGKILL, SIGSTOP and
// the C library's 32-34, and must neither die nor stop.
func TestSwallowedSignalsKeepProcessAlive(t *testing.T) {
	if os.Getenv("FEDMEM_SIGNAL_HELPER") == "1" {
		signalHelper()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSwallowedSignalsKeepProcessAlive$", "-test.count=1")
	cmd.Env = append(os.Environ(), "FEDMEM_SIGNAL_HELPER=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	defer cmd.Process.Kill()
	out := bufio.NewReader(pr)
	// A stopped or dead helper never answers: the deadline only bounds a
	// hang, it measures nothing.
	answer := func(what string) {
		t.Helper()
		_ = pr.SetReadDeadline(time.Now().Add(30 * time.Second))
		line, err := out.ReadString('\n')
		if err != nil || strings.TrimSpace(line) != what {
			st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
			t.Fatalf("helper after %s: read %q, %v (stat: %s)", what, line, err, st)
		}
	}
	answer("READY")
	for sig := 1; sig <= 64; sig++ {
		if sig == int(syscall.SIGKILL) || sig == int(syscall.SIGSTOP) || (sig >= 32 && sig <= 34) {
			continue
		}
		if err := syscall.Kill(cmd.Process.Pid, syscall.Signal(sig)); err != nil {
			t.Fatalf("kill %d: %v", sig, err)
		}
		fmt.Fprintf(stdin, "signal %d\n", sig)
		answer(fmt.Sprintf("signal %d", sig))
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("helper did not exit 0 after the signals: %v", err)
	}
}

// signalHelper holds the init's signal sets and echoes its stdin.
func signalHelper() {
	fwd := make(chan os.Signal, 16)
	signal.Notify(fwd, forwardedSignals...)
	go func() {
		for range fwd {
		}
	}()
	signal.Notify(make(chan os.Signal, 1), swallowedSignals...) // as the init: never read
	fmt.Println("READY")
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		fmt.Println(sc.Text())
	}
	os.Exit(0)
}
