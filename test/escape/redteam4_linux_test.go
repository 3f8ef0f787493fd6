package escape

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fedmem/fedmem/test/testutil"
)

// Red-team 4: two concurrent sessions with nested workdirs (a monorepo:
// session A in work/, session B in work/sub).

// TestRedteam4NestedSessionDetachesProtection: session B holds its
// workdir's .git read-only with mounts in its own mount namespace (an
// absent .git: a mode-0000 placeholder covered by a read-only tmpfs; an
// existing one: pinned, its config and hooks bound read-only). Session A's
// agent may write anywhere in work/ — work/sub included, its idmapped
// workdir makes it the owner of B's placeholders — and in A's namespace
// none of B's names is a mount point: it removes work/sub/.git (the
// placeholder) or work/sub/.git/config, which succeeds and, since Linux
// 3.18, detaches B's cover in B's namespace. A ends; its after-session
// sweep finds nothing it changed to quarantine (no .git, or a .git whose
// config is gone). B's agent then makes work/sub a repository with
// core.fsmonitor (or rewrites .git/config with it): B's sweep skips its
// own protected .git (the mounts were to hold it) and its cleanup leaves
// anything that is not an empty mode-0000 placeholder. The user's next
// `git status` in work/sub runs the agent's command (guarantee 6).
func TestRedteam4NestedSessionDetachesProtection(t *testing.T) {
	for _, l := range []layout{{name: "beside/root"}, {name: "beside/user", gateOwned: true, user: true}} {
		for _, c := range []struct {
			name     string
			existing bool   // work/sub is already a repository
			detach   string // session A's agent
			plant    string // session B's agent, after the detach
		}{
			{name: "placeholder", detach: "rmdir sub/.git", plant: "git init -q . && git config core.fsmonitor 'echo RT4-PLANT'"},
			{name: "existing", existing: true, detach: "rm -f sub/.git/config", plant: "git config core.fsmonitor 'echo RT4-PLANT'"},
		} {
			t.Run(l.name+"/"+c.name, func(t *testing.T) {
				e := setup(t, l)
				sub := filepath.Join(e.workdir, "sub")
				must(t, os.Mkdir(sub, 0o755))
				if c.existing {
					if out, err := testutil.Git(sub, "init", "-q"); err != nil {
						t.Fatalf("%v: %s", err, out)
					}
					olderThanSweepSlack(t, filepath.Join(sub, ".git"))
				}
				if l.user {
					must(t, testutil.ChownTree(sub, agentUID, agentUID))
				}

				// Session B in work/sub: the control (its .git/config
				// cannot be written), then it waits for the test's line.
				scriptB := "git config core.fsmonitor early >/dev/null 2>&1 && echo early-planted; echo up; read x; " + c.plant + " && echo planted"
				if !c.existing {
					scriptB = "git init -q . >/dev/null 2>&1 && echo early-planted; echo up; read x; " + c.plant + " && echo planted"
				}
				b := startNestedB(t, e, sub, scriptB, " (the control: its .git is read-only)")

				// Session A in work/: its agent removes one of B's mount
				// points (not one in A's namespace) and ends.
				rA := e.run(t, nil, "sh", "-c", c.detach+" && echo detached")
				t.Logf("session A: exit %d, stdout %q, stderr %s", rA.code, rA.stdout, rA.stderr)

				// B's agent plants, then B ends.
				rest := b.finish(t)

				cfg, err := os.ReadFile(filepath.Join(sub, ".git", "config"))
				if err == nil && bytes.Contains(cfg, []byte("RT4-PLANT")) {
					t.Fatalf("BREACH %s/.git/config on the host holds session B's agent's core.fsmonitor after both sessions (session A's agent removed B's mount point %q; B's sweep skipped its own protected .git): the user's next git status there runs it\n%s", sub, c.detach, cfg)
				}
				if bytes.Contains(rest, []byte("planted")) {
					// Planted during the session: it must have been moved
					// aside after it, and reported.
					q, _ := filepath.Glob(filepath.Join(sub, ".git.fedmem-quarantined-*"))
					if len(q) == 0 {
						t.Fatalf("session B's agent planted core.fsmonitor in %s/.git but no quarantined .git is there", sub)
					}
					t.Logf("planted during the session, quarantined after it: %v", q)
				}
			})
		}
	}
}

// TestRedteam4NestedSessionSwapsWorkdir: what session B's fedmem-run does
// after the session — quarantine a new .git/commondir, sweep the workdir
// for repositories the agent made or reconfigured — it does by path, and
// session A's agent (writable work/) renames work/sub away (work/sub is a
// mount point only in B's namespace: B's mounts follow the directory) and
// leaves an empty directory at work/sub before A ends. B's agent then
// points work/sub/.git/commondir at a common directory of its own whose
// config runs core.fsmonitor (commondir is not held: Git dies on a
// placeholder; it is moved aside after the session), or rewrites
// .git/config after A also removed it (detach). B's cleanup finds no
// commondir at work/sub and sweeps an empty directory: the user's project,
// at work/sub.moved, keeps the agent's hook when they move it back.
func TestRedteam4NestedSessionSwapsWorkdir(t *testing.T) {
	for _, l := range []layout{{name: "beside/root"}, {name: "beside/user", gateOwned: true, user: true}} {
		for _, c := range []struct {
			name   string
			detach string // session A's agent, besides the swap
			plant  string // session B's agent, after the swap
		}{
			{name: "commondir", plant: "mkdir -p evil/hooks evil/refs evil/objects && printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = echo RT4-PLANT\\n' > evil/config && echo ../evil > .git/commondir"},
			{name: "config", detach: "rm -f sub/.git/config && ", plant: "git config core.fsmonitor 'echo RT4-PLANT'"},
		} {
			t.Run(l.name+"/"+c.name, func(t *testing.T) {
				e := setup(t, l)
				sub := filepath.Join(e.workdir, "sub")
				moved := sub + ".moved"
				must(t, os.Mkdir(sub, 0o755))
				if out, err := testutil.Git(sub, "init", "-q"); err != nil {
					t.Fatalf("%v: %s", err, out)
				}
				olderThanSweepSlack(t, filepath.Join(sub, ".git"))
				if l.user {
					must(t, testutil.ChownTree(sub, agentUID, agentUID))
				}
				b := startNestedB(t, e, sub, "echo up; read x; "+c.plant+" && echo planted", "")
				rA := e.run(t, nil, "sh", "-c", c.detach+"mv sub sub.moved && mkdir sub && echo swapped")
				t.Logf("session A: exit %d, stdout %q, stderr %s", rA.code, rA.stdout, rA.stderr)

				rest := b.finish(t)

				// The user moves the project back and runs git there:
				// what git reads is what matters.
				for _, dir := range []string{sub, moved} {
					out, _ := testutil.Git(dir, "config", "--get", "core.fsmonitor")
					if strings.Contains(out, "RT4-PLANT") {
						t.Fatalf("BREACH git in %s reads session B's agent's core.fsmonitor after both sessions (session A's agent moved work/sub away during B; B's cleanup and sweep went by path)", dir)
					}
				}
				if bytes.Contains(rest, []byte("planted")) {
					q, _ := filepath.Glob(filepath.Join(moved, ".git*.fedmem-quarantined-*"))
					q2, _ := filepath.Glob(filepath.Join(moved, ".git", "*.fedmem-quarantined-*"))
					if len(q)+len(q2) == 0 {
						t.Fatalf("session B's agent planted in %s but nothing there was quarantined", moved)
					}
					t.Logf("quarantined: %v %v", q, q2)
				}
			})
		}
	}
}

// olderThanSweepSlack waits until the user's repository at p was made more
// than the sweep's slack (100 ms, sandbox/guard/protect_linux.go) before now: a
// session started within it counts the repository as born in it and
// quarantines it, which would hide the attack (the test passed on main in
// 4 subtests of 8 in one run without this).
func olderThanSweepSlack(t *testing.T, p string) {
	t.Helper()
	var sx unix.Statx_t
	must(t, unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BTIME|unix.STATX_CTIME, &sx))
	ts := sx.Ctime
	if sx.Mask&unix.STATX_BTIME != 0 {
		ts = sx.Btime
	}
	if d := time.Until(time.Unix(ts.Sec, int64(ts.Nsec)).Add(200 * time.Millisecond)); d > 0 {
		time.Sleep(d) // the condition is the clock itself
	}
}

// TestCoversHeldHostChangeNotQuarantined: the other side of the sweep's
// rule. While every cover of the workdir's .git held, the agent could not
// write it, so a change the user makes there from the host during the
// session (here: .git/config appended in place, which detaches nothing) is
// the user's own and the user's repository is not moved aside; the report
// says no cover was lost.
func TestCoversHeldHostChangeNotQuarantined(t *testing.T) {
	e := setup(t, layout{name: "beside/root"})
	gitDir := filepath.Join(e.workdir, ".git")
	if _, err := os.Lstat(gitDir); err != nil {
		if out, err := testutil.Git(e.workdir, "init", "-q"); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
	}
	olderThanSweepSlack(t, gitDir)
	goOn := filepath.Join(e.workdir, "go-on")
	wait := startWaiting(t, e, goOn)
	f, err := os.OpenFile(filepath.Join(gitDir, "config"), os.O_WRONLY|os.O_APPEND, 0)
	must(t, err)
	_, err = f.WriteString("[user]\n\tname = host-during-session\n")
	must(t, err)
	must(t, f.Close())
	must(t, os.WriteFile(goOn, nil, 0o644))
	out := wait()
	ents, err := os.ReadDir(e.workdir)
	must(t, err)
	for _, de := range ents {
		if strings.Contains(de.Name(), "fedmem-quarantined") {
			t.Fatalf("the user's own change moved %s aside although every cover held\nagent: %s", de.Name(), out)
		}
	}
	b, err := os.ReadFile(filepath.Join(gitDir, "config"))
	must(t, err)
	if !strings.Contains(string(b), "host-during-session") {
		t.Fatalf(".git/config lost the user's change:\n%s", b)
	}
}

// nestedB is session B of a red-team-4 test: a fedmem-run session in sub
// (nested in e's workdir) whose agent runs script, which says "up" on its
// first line and then waits for a line from the test (finish).
type nestedB struct {
	cmd    *exec.Cmd
	in     *os.File // the agent's stdin
	out    *bufio.Reader
	stderr bytes.Buffer
	waited chan error
}

// startNestedB starts session B and fails the test (saying why, with
// upNote) unless B's agent's first line is "up"; when the test ends it
// closes B's stdin and waits for B (killing it after a minute).
func startNestedB(t *testing.T, e *env, sub, script, upNote string) *nestedB {
	t.Helper()
	be := *e
	be.workdir = sub
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	b := &nestedB{waited: make(chan error, 1)}
	b.cmd = be.command(ctx, filepath.Join(e.outDir, "b.json"), nil, "sh", "-c", script)
	outR, outW, err := os.Pipe()
	must(t, err)
	inR, inW, err := os.Pipe()
	must(t, err)
	b.in = inW
	b.cmd.Stdin, b.cmd.Stdout, b.cmd.Stderr = inR, outW, &b.stderr
	must(t, b.cmd.Start())
	outW.Close()
	inR.Close()
	go func() { b.waited <- b.cmd.Wait() }()
	t.Cleanup(func() {
		inW.Close()
		select {
		case <-b.waited:
		case <-time.After(time.Minute):
			_ = b.cmd.Process.Kill()
			<-b.waited
		}
	})
	b.out = bufio.NewReader(outR)
	if line, _ := b.out.ReadString('\n'); strings.TrimSpace(line) != "up" {
		t.Fatalf("session B's agent said %q, want up%s\nstderr:\n%s", line, upNote, b.stderr.Bytes())
	}
	return b
}

// finish lets B's agent go on (a line on its stdin), then reads the rest of
// its output, waits for B to end (killing it after two minutes), logs how
// it ended and returns the output.
func (b *nestedB) finish(t *testing.T) []byte {
	t.Helper()
	_, err := io.WriteString(b.in, "go\n")
	must(t, err)
	b.in.Close()
	rest, _ := io.ReadAll(b.out)
	var werr error
	select {
	case werr = <-b.waited:
	case <-time.After(2 * time.Minute):
		_ = b.cmd.Process.Kill()
		werr = <-b.waited
	}
	b.waited <- werr // for the wait at cleanup
	t.Logf("session B: exit %d, stdout after up %q\nstderr:\n%s", exitCode(werr), rest, b.stderr.Bytes())
	return rest
}
