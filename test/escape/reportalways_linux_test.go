package escape

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fedmem/fedmem/test/testutil"
)

// reportOf runs fedmem-run (the real binary) with args and reads the
// report it wrote at rep.
func reportOf(t *testing.T, cmd *exec.Cmd, rep string) (int, string, map[string]any) {
	t.Helper()
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	code := exitCode(cmd.Run())
	b, err := os.ReadFile(rep)
	if err != nil {
		t.Fatalf("exit %d, no report at %s: %v\nstderr:\n%s", code, rep, err, se.Bytes())
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("report %s is not JSON: %v\n%s", rep, err, b)
	}
	return code, se.String(), m
}

// TestReportAlwaysWritten: once --report FILE is parsed, FILE gets a report
// with schema_version on every exit path — the agent's exit and every
// refusal before a session exists (bad flag, no command, unknown profile,
// YAML error, no vault, unknown backend, --events unopenable, inbox not
// reachable) — with exit_code and error {code, stage, msg}.
func TestReportAlwaysWritten(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	bad := filepath.Join(e.outDir, "typo.yaml")
	os.WriteFile(bad, []byte("name: typo\nextends: default\nnetwrok: none\n"), 0o644)
	n := 0
	direct := func(extra []string, argv ...string) (*exec.Cmd, string) {
		n++
		rep := filepath.Join(e.outDir, "r"+strconv.Itoa(n)+".json")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		t.Cleanup(cancel)
		args := append([]string{"--vault", e.vault.Dir, "--workdir", e.workdir, "--report", rep}, extra...)
		cmd := exec.CommandContext(ctx, e.bins.FedmemRun, append(append(args, "--"), argv...)...)
		cmd.Dir = e.workdir
		cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME=" + e.home, "LANG=C"}
		return cmd, rep
	}
	// The agent ran: schema_version beside the session.
	cmd, rep := direct(testutil.BackendArgs(), "true")
	code, stderr, m := reportOf(t, cmd, rep)
	if code != 0 || m["schema_version"] != 1.0 || m["session"] == "" || m["error"] != nil {
		t.Fatalf("a clean run: exit %d, report %v\n%s", code, m, stderr)
	}
	for _, c := range []struct {
		name, stage, msg string
		extra, argv      []string
	}{
		{"bad flag after --report", "flags", "-no-such-flag", []string{"--no-such-flag"}, []string{"true"}},
		{"no command", "flags", "no command given", nil, nil},
		{"unknown profile", "profile", `unknown profile "no-such-profile"`, []string{"--profile", "no-such-profile"}, []string{"true"}},
		{"YAML error", "profile", bad + `:3: unknown key "netwrok" (did you mean "network"?)`, []string{"--profile", bad}, []string{"true"}},
		{"no vault", "resolve", "no-such-vault", []string{"--vault", filepath.Join(e.base, "no-such-vault")}, []string{"true"}},
		{"unknown backend", "backend", "no-such-backend", []string{"--backend", "no-such-backend"}, []string{"true"}},
		{"events unopenable", "output", "--events " + e.outDir, []string{"--events", e.outDir}, []string{"true"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd, rep := direct(c.extra, c.argv...)
			code, stderr, m := reportOf(t, cmd, rep)
			checkErrorReport(t, code, stderr, m, c.stage, c.msg)
		})
	}
}

func checkErrorReport(t *testing.T, code int, stderr string, m map[string]any, stage, msg string) {
	t.Helper()
	er, _ := m["error"].(map[string]any)
	if code != 125 || m["schema_version"] != 1.0 || m["exit_code"] != 125.0 || er == nil {
		t.Fatalf("exit %d, report %v; want exit 125 and a report with schema_version 1, exit_code 125, error\nstderr:\n%s", code, m, stderr)
	}
	if er["code"] != 125.0 || er["stage"] != stage || !strings.Contains(er["msg"].(string), msg) {
		t.Fatalf("error %v; want code 125, stage %q, msg containing %q", er, stage, msg)
	}
}

// TestReportInboxNotReachable: a user who may not create a session folder
// in the vault's inbox is refused (125) before the agent runs, and the
// report says so (stage inbox).
func TestReportInboxNotReachable(t *testing.T) {
	e := setup(t, layout{name: "beside/user", gateOwned: true, user: true})
	inbox := filepath.Join(e.vault.Dir, "90-inbox")
	fi, err := os.Stat(inbox)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(inbox, 0o1700); err != nil { // the gate only
		t.Fatal(err)
	}
	defer os.Chmod(inbox, fi.Mode()&os.ModePerm|fi.Mode()&(os.ModeSticky|os.ModeSetgid))
	rep := filepath.Join(e.outDir, "inbox.json")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code, stderr, m := reportOf(t, e.command(ctx, rep, nil, "true"), rep)
	checkErrorReport(t, code, stderr, m, "inbox", "cannot create its session directory")
}

// TestReportLateSignal: a Ctrl-C (SIGINT) that reaches fedmem-run just as
// the agent ends — while the backend tears down and the report is being
// written — must not end fedmem-run by the default action: the exit code
// is the agent's and the report is complete. (Seen in CI: a real client
// exiting on its own while the test's Ctrl-C arrived left a truncated
// report.) The agent ignores SIGINT, says "bye" and exits 0; from "bye"
// on, SIGINT is sent every 100 µs until fedmem-run has exited, so the
// signals cover the backend's teardown and the report's writing.
func TestReportLateSignal(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	for i := range 5 {
		rep := filepath.Join(e.outDir, "late"+strconv.Itoa(i)+".json")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		args := append([]string{"--vault", e.vault.Dir, "--workdir", e.workdir, "--report", rep}, testutil.BackendArgs()...)
		cmd := exec.CommandContext(ctx, e.bins.FedmemRun, append(args, "--", "sh", "-c", "trap '' INT; echo bye")...)
		cmd.Dir = e.workdir
		cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME=" + e.home, "LANG=C"}
		pr, pw, err := os.Pipe()
		must(t, err)
		var se bytes.Buffer
		cmd.Stdout, cmd.Stderr = pw, &se
		must(t, cmd.Start())
		pw.Close()
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()
		buf := make([]byte, 64)
		n, _ := pr.Read(buf)
		pr.Close()
		if !bytes.Contains(buf[:n], []byte("bye")) {
			t.Fatalf("run %d: the agent said %q, want bye", i, buf[:n])
		}
		sent := 0
		var werr error
	spam:
		for {
			select {
			case werr = <-waited:
				break spam
			default:
				if cmd.Process.Signal(os.Interrupt) == nil {
					sent++
				}
				time.Sleep(100 * time.Microsecond)
			}
		}
		cancel()
		code := exitCode(werr)
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Fatalf("run %d: fedmem-run was killed by %v after %d SIGINTs; it must ignore a signal that arrives after the agent ended\nstderr:\n%s", i, ws.Signal(), sent, se.Bytes())
		}
		b, err := os.ReadFile(rep)
		if err != nil {
			t.Fatalf("run %d: exit %d after %d SIGINTs, no report: %v\nstderr:\n%s", i, code, sent, err, se.Bytes())
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("run %d: report is not JSON after %d SIGINTs: %v\n%s", i, sent, err, b)
		}
		if code != 0 || m["exit_code"] != 0.0 || m["schema_version"] != 1.0 || m["error"] != nil {
			t.Fatalf("run %d: exit %d, report %v after %d SIGINTs; want the agent's exit 0 in a complete report\nstderr:\n%s", i, code, m, sent, se.Bytes())
		}
		t.Logf("run %d: %d SIGINTs sent after the agent's bye; exit 0, report complete", i, sent)
	}
}
