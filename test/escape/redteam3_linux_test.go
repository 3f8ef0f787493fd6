package escape

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Red-team 3: the launcher and init changes of issue 9 (signals held to
// exit, concurrent teardown, early idmap namespace, per-thread
// no_new_privs, fewer caught signals in pid 1, cached seccomp filter).

// TestRedteam3HeldSignalsUnstoppableHang: fedmem-run holds SIGINT, SIGTERM,
// SIGHUP and SIGQUIT from the session's start until it exits (89c708a),
// and the namespace backend's every return waits for the placeholders'
// guard, whose shared flock(2) on each protected directory blocks. An agent
// of a concurrent session whose writable workdir holds another project's
// workdir (a monorepo: session A in work/, session B in work/sub) takes
// LOCK_EX on work/sub — any open descriptor will do, flock needs no write
// permission — and session B's fedmem-run waits for its shared lock
// forever. The user's Ctrl-C / SIGTERM (a CI job's timeout) is forwarded
// to B's pid 1, which dies, and then B's fedmem-run waits in its cleanup
// for the same guard; every further SIGINT/SIGTERM is swallowed (before
// 89c708a the backend's signal.Stop ran on return and the second one ended
// it). Only SIGKILL stops it. The test asserts B's fedmem-run ends after
// SIGTERMs while the lock is held, and not by SIGKILL: after its bounded
// wait for the lock (10 s) it refuses the session (125), naming the
// directory, and the agent never ran.
func TestRedteam3HeldSignalsUnstoppableHang(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	ctxA, cancelA := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancelA()
	lock := `import fcntl, os, time
os.makedirs("sub", exist_ok=True)
fd = os.open("sub", os.O_RDONLY | os.O_DIRECTORY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("locked", flush=True)
import sys
sys.stdin.read() # until the test closes it`
	a := e.command(ctxA, "", nil, "python3", "-c", lock)
	pr, pw, err := os.Pipe()
	must(t, err)
	inR, inW, err := os.Pipe()
	must(t, err)
	var seA bytes.Buffer
	a.Stdin, a.Stdout, a.Stderr = inR, pw, &seA
	must(t, a.Start())
	pw.Close()
	inR.Close()
	defer func() {
		inW.Close() // session A's agent lets go and ends
		_ = a.Wait()
	}()
	line, _ := bufio.NewReader(pr).ReadString('\n')
	if strings.TrimSpace(line) != "locked" {
		_ = a.Process.Kill()
		_ = a.Wait()
		t.Fatalf("session A's agent said %q, want locked\nstderr:\n%s", line, seA.Bytes())
	}
	subDir := filepath.Join(e.workdir, "sub")
	var st syscall.Stat_t
	must(t, syscall.Stat(subDir, &st))

	// Session B in work/sub.
	b := *e
	b.workdir = subDir
	ctxB, cancelB := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancelB()
	cmd := b.command(ctxB, filepath.Join(e.outDir, "b.json"), nil, "sh", "-c", "echo hello")
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	must(t, cmd.Start())
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	// The user gives up: SIGTERM, repeated, for up to a minute. B's
	// fedmem-run waits for the lock a bounded time (10 s), then refuses
	// the session, naming the directory.
	deadline := time.After(time.Minute)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	sent := 0
	for {
		select {
		case werr := <-waited:
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				t.Fatalf("session B's fedmem-run ended by %v (%v)", ws.Signal(), werr)
			}
			if code := exitCode(werr); code != 125 || !strings.Contains(se.String(), subDir) || !strings.Contains(se.String(), "flock") {
				t.Fatalf("session B's fedmem-run: exit %d after %d SIGTERMs; want 125 and stderr naming %s and the flock\nstdout %q\nstderr:\n%s", code, sent, subDir, so.Bytes(), se.Bytes())
			}
			if bytes.Contains(so.Bytes(), []byte("hello")) {
				t.Fatalf("session B's agent ran with its placeholders unguarded: stdout %q", so.Bytes())
			}
			t.Logf("session B's fedmem-run refused after %d SIGTERMs (exit 125): %s", sent, se.Bytes())
			return
		case <-tick.C:
			if cmd.Process.Signal(syscall.SIGTERM) == nil {
				sent++
			}
		case <-deadline:
			_ = cmd.Process.Kill()
			<-waited
			t.Fatalf("BREACH session B's fedmem-run still ran a minute after %d SIGTERMs: blocked on a flock held by session A's agent, its signals held to exit (only SIGKILL ends it)\nstderr:\n%s", sent, se.Bytes())
		}
	}
}

// TestRedteam3SigtermReachesAgent: fedmem-run forwards SIGTERM (and
// SIGINT, SIGHUP…) to pid 1, whose forker thread sends it to the agent.
// For a root caller the agent runs as another uid (spec.UID) and the
// forker thread is uid 0 of the user namespace with no CAP_KILL (only
// CAP_SETUID/CAP_SETGID are kept): kill(2) fails with EPERM, the signal is
// dropped, and fedmem-run — which holds the forwarded signals until it
// exits — cannot be stopped by a CI timeout's SIGTERM or a Ctrl-C outside
// a TTY; the agent runs on (only the wall-time limit or SIGKILL end it).
// DESIGN.md: "TTY, signals, window size and exit codes pass through".
func TestRedteam3SigtermReachesAgent(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := e.command(ctx, filepath.Join(e.outDir, "term.json"), nil, "sh", "-c", "echo up; exec sleep 120")
	pr, pw, err := os.Pipe()
	must(t, err)
	var se bytes.Buffer
	cmd.Stdout, cmd.Stderr = pw, &se
	must(t, cmd.Start())
	pw.Close()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	line, _ := bufio.NewReader(pr).ReadString('\n')
	if strings.TrimSpace(line) != "up" {
		t.Fatalf("the agent said %q, want up\nstderr:\n%s", line, se.Bytes())
	}
	must(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case werr := <-waited:
		if code := exitCode(werr); code != 128+int(syscall.SIGTERM) {
			t.Errorf("fedmem-run exit %d after SIGTERM, want %d (the agent killed by the forwarded SIGTERM)\nstderr:\n%s", code, 128+int(syscall.SIGTERM), se.Bytes())
		}
	case <-time.After(time.Minute):
		_ = cmd.Process.Kill()
		<-waited
		t.Fatalf("BREACH the agent (sleep 120) still ran a minute after fedmem-run got SIGTERM: the forwarded signal never reached it\nstderr:\n%s", se.Bytes())
	}
}
